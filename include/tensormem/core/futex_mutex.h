// FutexMutex: a mutex whose uncontended lock and unlock are one inline atomic
// instruction each.
//
// std::mutex goes through pthread_mutex_lock/unlock, out-of-line calls that
// check the mutex type on every use: about 55 instructions per lock and unlock,
// as much as a quarter of a BFC allocation. Here the uncontended path is a
// compare-exchange and an exchange; a contended lock sleeps in the kernel
// (std::atomic::wait, a futex on Linux) instead of spinning, so it costs
// nothing when threads outnumber cores. Not recursive, not fair.
// ThreadSanitizer sees its acquire/release atomics.
//
//   FutexMutex mutex;
//   {
//     std::lock_guard lock(mutex);
//     ...  // critical section
//   }
#ifndef TENSORMEM_CORE_FUTEX_MUTEX_H_
#define TENSORMEM_CORE_FUTEX_MUTEX_H_

#include <atomic>

namespace tensormem {

class FutexMutex {
 public:
  FutexMutex() = default;
  FutexMutex(const FutexMutex&) = delete;
  FutexMutex& operator=(const FutexMutex&) = delete;

  void lock() {
    int expected = kUnlocked;
    if (state_.compare_exchange_strong(expected, kLocked,
                                       std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
      return;
    }
    LockContended();
  }

  bool try_lock() {
    int expected = kUnlocked;
    return state_.compare_exchange_strong(expected, kLocked,
                                          std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }

  void unlock() {
    if (state_.exchange(kUnlocked, std::memory_order_release) == kContended)
      state_.notify_one();
  }

 private:
  static constexpr int kUnlocked = 0;
  static constexpr int kLocked = 1;
  // Locked, and a thread may be asleep waiting: unlock must wake one.
  static constexpr int kContended = 2;

  [[gnu::noinline]] void LockContended() {
    // Whoever takes the lock from here on marks it contended, since other
    // sleepers may remain; a spurious wake-up costs one futex call.
    while (state_.exchange(kContended, std::memory_order_acquire) !=
           kUnlocked) {
      state_.wait(kContended, std::memory_order_relaxed);
    }
  }

  std::atomic<int> state_{kUnlocked};
};

}  // namespace tensormem

#endif  // TENSORMEM_CORE_FUTEX_MUTEX_H_
