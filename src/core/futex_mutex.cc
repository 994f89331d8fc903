#include "tensormem/core/futex_mutex.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
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
  Wait wait{.handoffs_seen = handoffs_.load(std::memory_order_seq_cst),
            .since = NowNanos()};
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  for (wait.round = 1; !TryTakeHandOff(wait) && !TryTakeFreeLock(wait);
       ++wait.round) {
    Pause(wait);
  }
  waiters_.fetch_sub(1, std::memory_order_relaxed);
}

bool FutexMutex::TryTakeHandOff(Wait& wait) {
  // The counter sits on a line of its own that the holder writes only when
  // it hands off, so watching it costs the holder nothing.
  const uint64_t handoffs = handoffs_.load(std::memory_order_acquire);
  if (handoffs == wait.handoffs_seen) return false;
  int expected = kHandedOff;
  if (state_.compare_exchange_strong(expected, kLocked,
                                     std::memory_order_acquire,
                                     std::memory_order_relaxed)) {
    return true;
  }
  wait.handoffs_seen = handoffs;  // another waiter took it
  return false;
}

bool FutexMutex::TryTakeFreeLock(Wait& wait) {
  // A holder that runs critical sections back to back leaves the lock free
  // for a few nanoseconds between them; taking it then would move the pool
  // to this core after a few operations. So the lock itself is looked at
  // seldom (each look pulls its line from the holder): at rounds 1, 2, 4,
  // then every kRoundsPerLook; and taken when the holder has left, or at
  // any look after kTurnNanos.
  const int round = wait.round;
  const bool look = round < kRoundsPerLook ? (round & (round - 1)) == 0
                                           : round % kRoundsPerLook == 0;
  if (!look && !wait.asleep) return false;
  int state = state_.load(std::memory_order_relaxed);
  const int unlocks = unlocks_with_waiters_.load(std::memory_order_relaxed);
  // Free at two looks with no unlock between them: the holder has left. A
  // holder between two critical sections counts an unlock at each, since
  // this waiter is counted in.
  const bool holder_left = state == kUnlocked && wait.free_at_last_look &&
                           unlocks == wait.unlocks_at_last_look;
  wait.free_at_last_look = state == kUnlocked;
  wait.unlocks_at_last_look = unlocks;
  wait.long_enough = wait.long_enough || NowNanos() - wait.since >= kTurnNanos;
  // After a turn, also a hand-off that no waiter took.
  const bool may_take = holder_left || (state != kLocked && wait.long_enough);
  return may_take && state_.compare_exchange_strong(state, kLocked,
                                                    std::memory_order_acquire,
                                                    std::memory_order_relaxed);
}

void FutexMutex::Pause(Wait& wait) {
  if (wait.round < kSpinRounds) {
    for (int i = 0; i < kPausesPerRound; ++i) CpuRelax();
    // More waiters than cores would take the holder's core from it.
    if (wait.round % kRoundsPerLook == 0) sched_yield();
    return;
  }
  if (!wait.asleep) {
    parked_.fetch_add(1, std::memory_order_relaxed);
    wait.asleep = true;
  }
  sleepers_.fetch_add(1, std::memory_order_relaxed);
  FutexWait(&state_, kLocked, wait.poll_micros);
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
  wait.poll_micros = std::min(2 * wait.poll_micros, kLastPollMicros);
}

void FutexMutex::HandToWaiter() {
  unlocks_with_waiters_.store(0, std::memory_order_relaxed);
  state_.store(kHandedOff, std::memory_order_release);
  handoffs_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_relaxed) != 0) FutexWakeOne(&state_);
}

}  // namespace tensormem
