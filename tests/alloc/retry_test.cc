// Tests of AllocationRetrier against a fake, capacity-limited consumer.
#include "tensormem/alloc/retry.h"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tensormem {
namespace {

using ::testing::ElementsAre;

// A pool of `capacity` units; a successful take returns a non-null token.
class UnitPool {
 public:
  UnitPool(int capacity, AllocationRetrier* retrier)
      : free_(capacity), retrier_(retrier) {}

  void* TryTake() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_ == 0) return nullptr;
    --free_;
    return this;
  }
  void Give() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++free_;
    }
    retrier_->NotifyDealloc();
  }

 private:
  std::mutex mutex_;
  int free_ ABSL_GUARDED_BY(mutex_);
  AllocationRetrier* retrier_;
};

TEST(AllocationRetrierTest, ReturnsAFirstSuccessWithoutWaiting) {
  AllocationRetrier retrier;
  std::vector<bool> verbose_flags;
  int token = 0;
  void* result = retrier.AllocateWithRetry(
      [&](bool verbose) -> void* {
        verbose_flags.push_back(verbose);
        return &token;
      },
      absl::Seconds(10));
  EXPECT_EQ(result, &token);
  EXPECT_THAT(verbose_flags, ElementsAre(false));
  EXPECT_EQ(retrier.retried_calls(), 0);
  EXPECT_EQ(retrier.total_wait(), absl::ZeroDuration());
}

TEST(AllocationRetrierTest, ZeroDeadlineMeansOneQuietAndOneVerboseAttempt) {
  AllocationRetrier retrier;
  std::vector<bool> verbose_flags;
  void* result = retrier.AllocateWithRetry(
      [&](bool verbose) -> void* {
        verbose_flags.push_back(verbose);
        return nullptr;
      },
      absl::ZeroDuration());
  EXPECT_EQ(result, nullptr);
  EXPECT_THAT(verbose_flags, ElementsAre(false, true));
  EXPECT_EQ(retrier.retried_calls(), 1);
}

TEST(AllocationRetrierTest, ShortDeadlineWithoutFreesEndsInOneVerboseAttempt) {
  AllocationRetrier retrier;
  std::vector<bool> verbose_flags;
  void* result = retrier.AllocateWithRetry(
      [&](bool verbose) -> void* {
        verbose_flags.push_back(verbose);
        return nullptr;
      },
      absl::Milliseconds(20));
  EXPECT_EQ(result, nullptr);
  // Nobody freed anything, so nothing woke it before the deadline.
  EXPECT_THAT(verbose_flags, ElementsAre(false, true));
  EXPECT_GE(retrier.total_wait(), absl::Milliseconds(20));
}

TEST(AllocationRetrierTest, AFreeDuringTheFailedAttemptIsNotLost) {
  AllocationRetrier retrier;
  UnitPool pool(0, &retrier);
  std::vector<bool> verbose_flags;
  // The first attempt fails, and a unit comes back before the retrier gets to
  // wait: it must retry at once instead of sleeping until the deadline.
  void* result = retrier.AllocateWithRetry(
      [&](bool verbose) -> void* {
        verbose_flags.push_back(verbose);
        void* token = pool.TryTake();
        if (verbose_flags.size() == 1) pool.Give();
        return token;
      },
      absl::Seconds(60));
  EXPECT_NE(result, nullptr);
  EXPECT_THAT(verbose_flags, ElementsAre(false, false));
}

TEST(AllocationRetrierTest, AnInfiniteDeadlineWaitsForTheFree) {
  AllocationRetrier retrier;
  UnitPool pool(0, &retrier);
  std::atomic<int> attempts = 0;
  std::vector<bool> verbose_flags;
  std::thread consumer([&] {
    void* token = retrier.AllocateWithRetry(
        [&](bool verbose) {
          verbose_flags.push_back(verbose);
          void* taken = pool.TryTake();
          attempts.fetch_add(1);  // after the take: the unit comes later
          return taken;
        },
        absl::InfiniteDuration());
    EXPECT_NE(token, nullptr);
  });
  while (attempts.load() == 0) std::this_thread::yield();
  pool.Give();
  consumer.join();
  EXPECT_THAT(verbose_flags, ElementsAre(false, false));
  EXPECT_EQ(retrier.retried_calls(), 1);
}

// Consumers that each need one unit while the test holds them all: with a
// deadline they wait for the units to come back; with none they fail.
int RunConsumers(absl::Duration deadline, int consumers, int capacity) {
  AllocationRetrier retrier;
  UnitPool pool(0, &retrier);  // everything is held by the test at first
  std::atomic<int> first_attempts_done = 0;
  std::atomic<int> successes = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < consumers; ++i) {
    threads.emplace_back([&] {
      bool first = true;
      void* token = retrier.AllocateWithRetry(
          [&](bool /*verbose*/) {
            void* taken = pool.TryTake();
            if (first) {
              first = false;
              first_attempts_done.fetch_add(1);
            }
            return taken;
          },
          deadline);
      if (token == nullptr) return;
      successes.fetch_add(1);
      pool.Give();  // done with it: the next consumer may have it
    });
  }
  // Give the units back only once every consumer has failed once, so the
  // zero-deadline consumers fail for certain.
  while (first_attempts_done.load() < consumers) std::this_thread::yield();
  if (deadline == absl::ZeroDuration()) {
    for (std::thread& thread : threads) thread.join();
    threads.clear();
  }
  for (int i = 0; i < capacity; ++i) pool.Give();
  for (std::thread& thread : threads) thread.join();
  return successes.load();
}

TEST(AllocationRetrierTest, CapacityLimitedConsumersSucceedWithADeadline) {
  EXPECT_EQ(RunConsumers(absl::Seconds(1), /*consumers=*/8, /*capacity=*/2), 8);
}

TEST(AllocationRetrierTest, CapacityLimitedConsumersFailWithoutOne) {
  EXPECT_EQ(RunConsumers(absl::ZeroDuration(), /*consumers=*/8, /*capacity=*/2),
            0);
}

TEST(AllocationRetrierTest, NotifyWithoutWaitersIsHarmless) {
  AllocationRetrier retrier;
  for (int i = 0; i < 1000; ++i) retrier.NotifyDealloc();
  int token = 0;
  EXPECT_EQ(retrier.AllocateWithRetry([&](bool) -> void* { return &token; },
                                      absl::Seconds(1)),
            &token);
}

}  // namespace
}  // namespace tensormem
