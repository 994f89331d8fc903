// FutexMutex: a mutex whose uncontended lock and unlock are one inline atomic
// instruction each, and which, contended, lets one thread run a long batch of
// critical sections before the next thread's turn.
//
// std::mutex goes through pthread_mutex_lock/unlock, out-of-line calls that
// check the mutex type on every use: about 55 instructions per lock and unlock,
// as much as a quarter of a BFC allocation. Contended, the allocator's cost is
// not the waiting but the moving: each time the lock changes cores, the pool's
// chunks, free index and counters follow it, cache line by cache line. Two
// threads that took turns at every operation ran 4 to 8 times slower than one
// thread alone, whether the waiter slept (woken at every unlock) or spun; a
// waiter that looked at the lock often slowed the holder by half (docs/bfc.md,
// Threads). So here a waiter looks rarely and soon sleeps, takes the lock only
// when it is handed over or the holder has left (free at two looks in a row
// with no unlock between them; a holder that is only between two critical
// sections unlocks in between), and the holder keeps the lock across its
// critical sections until it has unlocked kBatch times with a waiter present,
// then hands it over: the holder cannot take it back first.
// Not recursive; fair only across batches. ThreadSanitizer sees the
// acquire/release atomics; the futex calls only sleep and wake.
//
//   FutexMutex mutex;
//   {
//     std::lock_guard lock(mutex);
//     ...  // critical section
//   }
#ifndef TENSORMEM_CORE_FUTEX_MUTEX_H_
#define TENSORMEM_CORE_FUTEX_MUTEX_H_

#include <atomic>
#include <cstdint>

namespace tensormem {

class FutexMutex {
 public:
  // Unlocks with a waiter present before the lock is handed over; how long
  // a waiter waits before it takes any lock not held (a safety net: a
  // hand-off or a holder that left comes first); how often a sleeping
  // waiter looks on its own: soon after it fell asleep, then less and less
  // often (each look wakes a thread, which on a machine with fewer cores
  // than threads can take the holder's core).
  static constexpr int kBatch = 65536;
  static constexpr int64_t kTurnNanos = 5'000'000;
  static constexpr int kFirstPollMicros = 50;
  static constexpr int kLastPollMicros = 1000;

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
    if (waiters_.load(std::memory_order_seq_cst) != 0) {
      // Only holders write it; waiters read it to tell a holder between
      // two critical sections from one that has left.
      const int unlocks =
          unlocks_with_waiters_.load(std::memory_order_relaxed) + 1;
      unlocks_with_waiters_.store(unlocks, std::memory_order_relaxed);
      if (unlocks >= kBatch) {
        HandToWaiter();
        return;
      }
    }
    state_.store(kUnlocked, std::memory_order_release);
  }

  // How often lock() found the mutex held, how often a waiter went to sleep,
  // and how often the lock was handed over; counted only on those slow
  // paths, so the uncontended path pays nothing.
  struct Contention {
    uint64_t contended = 0;
    uint64_t parked = 0;
    uint64_t handoffs = 0;
  };
  Contention contention() const {
    return {contended_.load(std::memory_order_relaxed),
            parked_.load(std::memory_order_relaxed),
            handoffs_.load(std::memory_order_relaxed)};
  }

 private:
  static constexpr int kUnlocked = 0;
  static constexpr int kLocked = 1;
  // Unlocked for waiters only: lock()'s fast path cannot take it.
  static constexpr int kHandedOff = 2;
  // A waiting thread's rounds: a few pauses each (about 0.1 us each here),
  // a look at the lock every kRoundsPerLook (after a few early ones), and
  // sleep after kSpinRounds (about 200 us): a turn lasts a batch, and a
  // spinning waiter slows the holder.
  static constexpr int kPausesPerRound = 32;
  static constexpr int kRoundsPerLook = 2;
  static constexpr int kSpinRounds = 64;

  // A waiting thread's progress (LockContended's steps).
  struct Wait {
    uint64_t handoffs_seen = 0;
    int64_t since = 0;  // steady clock, ns
    int round = 0;
    bool free_at_last_look = false;
    int unlocks_at_last_look = 0;
    bool long_enough = false;            // waited kTurnNanos
    bool asleep = false;                 // past kSpinRounds
    int poll_micros = kFirstPollMicros;  // doubles at each sleep
  };
  [[gnu::noinline]] void LockContended();
  bool TryTakeHandOff(Wait& wait);
  bool TryTakeFreeLock(Wait& wait);
  void Pause(Wait& wait);
  [[gnu::noinline]] void HandToWaiter();

  std::atomic<int> state_{kUnlocked};
  std::atomic<int> waiters_{0};
  std::atomic<int> sleepers_{0};              // of the waiters, those asleep
  std::atomic<int> unlocks_with_waiters_{0};  // since the last hand-off
  std::atomic<uint64_t> contended_{0};
  std::atomic<uint64_t> parked_{0};
  // Waiters watch it instead of the lock: on a line of its own.
  alignas(64) std::atomic<uint64_t> handoffs_{0};
};

}  // namespace tensormem

#endif  // TENSORMEM_CORE_FUTEX_MUTEX_H_
