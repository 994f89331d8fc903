#include "tensormem/alloc/retry.h"

namespace tensormem {

void* AllocationRetrier::AllocateWithRetry(
    absl::FunctionRef<void*(bool verbose)> attempt, absl::Duration deadline) {
  uint64_t seen_generation = dealloc_generation_.load();
  if (void* ptr = attempt(false); ptr != nullptr) return ptr;

  const absl::Time start = absl::Now();
  const absl::Time give_up = start + deadline;
  {
    absl::MutexLock lock(&mutex_);
    ++retried_calls_;
  }
  while (absl::Now() < give_up) {
    {
      absl::MutexLock lock(&mutex_);
      ++waiters_;
      // Waiting for a generation change rather than for the signal alone
      // means a free between the failed attempt and this wait still counts.
      while (dealloc_generation_ == seen_generation) {
        if (memory_returned_.WaitWithDeadline(&mutex_, give_up))
          break;  // timed out
      }
      --waiters_;
      if (dealloc_generation_ == seen_generation)
        break;  // deadline passed, no free
      seen_generation = dealloc_generation_.load();
    }
    if (void* ptr = attempt(false); ptr != nullptr) {
      absl::MutexLock lock(&mutex_);
      total_wait_ += absl::Now() - start;
      return ptr;
    }
  }
  void* ptr = attempt(true);
  absl::MutexLock lock(&mutex_);
  total_wait_ += absl::Now() - start;
  return ptr;
}

void AllocationRetrier::NotifyDealloc() {
  dealloc_generation_.fetch_add(1);
  if (waiters_.load() == 0) return;
  // Taking the lock orders this signal after a waiter's check-then-wait.
  absl::MutexLock lock(&mutex_);
  memory_returned_.SignalAll();
}

absl::Duration AllocationRetrier::total_wait() const {
  absl::MutexLock lock(&mutex_);
  return total_wait_;
}

int64_t AllocationRetrier::retried_calls() const {
  absl::MutexLock lock(&mutex_);
  return retried_calls_;
}

}  // namespace tensormem
