#include "tensormem/core/futex_mutex.h"

#include <atomic>
#include <chrono>
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

// A holder that never stops locking must still hand the lock over: a waiter
// gets it within a batch of the holder's unlocks (plus the moment the waiter
// takes to arrive), never after the holder gives up.
TEST(FutexMutexTest, HandsTheLockToAWaiterOfAHolderThatNeverStops) {
  FutexMutex mutex;
  std::atomic<bool> waiter_ran{false};
  constexpr int64_t kGiveUpAfter = int64_t{1000} * FutexMutex::kBatch;
  std::atomic<int64_t> unlocks{0};
  volatile int busy_work = 0;
  std::thread holder([&] {
    while (!waiter_ran.load(std::memory_order_relaxed) &&
           unlocks.load(std::memory_order_relaxed) < kGiveUpAfter) {
      std::lock_guard lock(mutex);
      // Held far longer than it is free, so the waiter almost always finds
      // it held (a lock() that finds it free between two sections takes it).
      for (int i = 0; i < 200; ++i) busy_work = i;
      unlocks.fetch_add(1, std::memory_order_relaxed);
    }
  });
  // The holder is under way before the waiter comes.
  while (unlocks.load(std::memory_order_relaxed) < 1000)
    std::this_thread::yield();
  std::thread waiter([&] {
    std::lock_guard lock(mutex);
    waiter_ran = true;
  });
  waiter.join();
  holder.join();
  EXPECT_TRUE(waiter_ran);
  EXPECT_LT(unlocks.load(), kGiveUpAfter);
}

// A waiter that went to sleep wakes and takes the lock when a holder that
// unlocked fewer than a batch of times leaves for good.
TEST(FutexMutexTest, ASleepingWaiterTakesTheLockAHolderLeft) {
  FutexMutex mutex;
  mutex.lock();
  std::atomic<bool> acquired{false};
  std::thread waiter([&] {
    std::lock_guard lock(mutex);
    acquired = true;
  });
  // Long enough for the waiter to give up spinning and sleep.
  while (mutex.contention().parked == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  mutex.unlock();
  waiter.join();
  EXPECT_TRUE(acquired);
  EXPECT_EQ(mutex.contention().handoffs, 0u);
}

// Counters: nothing on the uncontended path.
TEST(FutexMutexTest, UncontendedLockingCountsNothing) {
  FutexMutex mutex;
  for (int i = 0; i < 1000; ++i) {
    std::lock_guard lock(mutex);
  }
  const FutexMutex::Contention contention = mutex.contention();
  EXPECT_EQ(contention.contended, 0u);
  EXPECT_EQ(contention.parked, 0u);
  EXPECT_EQ(contention.handoffs, 0u);
}

}  // namespace
}  // namespace tensormem
