#include "tensormem/core/futex_mutex.h"

#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tensormem {
namespace {

TEST(FutexMutexTest, TryLockFailsWhileHeld) {
  FutexMutex mutex;
  ASSERT_TRUE(mutex.try_lock());
  EXPECT_FALSE(mutex.try_lock());
  mutex.unlock();
  EXPECT_TRUE(mutex.try_lock());
  mutex.unlock();
}

// More threads than cores, so holders get preempted and waiters sleep.
TEST(FutexMutexTest, ExcludesAndWakesEveryWaiter) {
  FutexMutex mutex;
  int64_t counter = 0;  // deliberately not atomic: the mutex protects it
  constexpr int kThreads = 6;
  constexpr int kIncrements = 50'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        std::lock_guard lock(mutex);
        ++counter;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counter, int64_t{kThreads} * kIncrements);
}

}  // namespace
}  // namespace tensormem
