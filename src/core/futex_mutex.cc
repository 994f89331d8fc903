#include "tensormem/core/futex_mutex.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>

namespace tensormem {
namespace {

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Sleeps while `*word` holds `value`, at most `micros`; spurious returns are
// fine, the callers look again.
void FutexWait(std::atomic<int>* word, int value, int micros) {
  const timespec timeout = {0, micros * 1000L};
  syscall(SYS_futex, reinterpret_cast<int*>(word), FUTEX_WAIT_PRIVATE, value,
          &timeout, nullptr, 0);
}

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void FutexWakeOne(std::atomic<int>* word) {
  syscall(SYS_futex, reinterpret_cast<int*>(word), FUTEX_WAKE_PRIVATE, 1,
          nullptr, nullptr, 0);
}

}  // namespace

void FutexMutex::LockContended() {
  contended_.fetch_add(1, std::memory_order_relaxed);
  // Hand-offs made before this thread came are not for it: it may be the
  // holder that made the last one. Read before counting in as a waiter (both
  // sequentially consistent, as the holder's reading of the count and its
  // hand-off are): a holder that saw this waiter hands off after this read,
  // so the hand-off counts for it.
  uint64_t handoffs_seen = handoffs_.load(std::memory_order_seq_cst);
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  const int64_t since = NowNanos();
  bool long_enough = false;
  int unlocked_looks = 0;
  bool parked = false;
  for (int round = 1;; ++round) {
    // A hand-off: the counter sits on a line of its own that the holder
    // writes only then, so watching it costs the holder nothing.
    const uint64_t handoffs = handoffs_.load(std::memory_order_acquire);
    if (handoffs != handoffs_seen ||
        (long_enough && state_.load(std::memory_order_relaxed) == kHandedOff)) {
      int expected = kHandedOff;
      if (state_.compare_exchange_strong(expected, kLocked,
                                         std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
        break;
      }
      handoffs_seen = handoffs;  // another waiter took it
    }
    // A holder that runs critical sections back to back leaves the lock free
    // for a few nanoseconds between them; taking it then would move the pool
    // to this core after a few operations. So the lock itself is looked at
    // seldom (each look pulls its line from the holder): at rounds 1, 2, 4,
    // 8, then every kRoundsPerLook; and taken when free at two looks in a
    // row (the holder has left), or at any look after kTurnNanos.
    if (round < kRoundsPerLook ? (round & (round - 1)) == 0
                               : round % kRoundsPerLook == 0 || parked) {
      int state = state_.load(std::memory_order_relaxed);
      unlocked_looks = state == kUnlocked ? unlocked_looks + 1 : 0;
      long_enough = long_enough || NowNanos() - since >= kTurnNanos;
      if (state == kUnlocked && (unlocked_looks >= 2 || long_enough) &&
          state_.compare_exchange_strong(state, kLocked,
                                         std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
        break;
      }
    }
    if (round < kSpinRounds) {
      for (int i = 0; i < kPausesPerRound; ++i) CpuRelax();
      // More waiters than cores would take the holder's core from it.
      if (round % kRoundsPerLook == 0) sched_yield();
      continue;
    }
    if (!parked) {
      parked_.fetch_add(1, std::memory_order_relaxed);
      parked = true;
    }
    sleepers_.fetch_add(1, std::memory_order_relaxed);
    FutexWait(&state_, kLocked, kPollMicros);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
  waiters_.fetch_sub(1, std::memory_order_relaxed);
}

void FutexMutex::HandToWaiter() {
  unlocks_with_waiters_ = 0;
  state_.store(kHandedOff, std::memory_order_release);
  handoffs_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_relaxed) != 0) FutexWakeOne(&state_);
}

}  // namespace tensormem
