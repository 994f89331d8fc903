// AllocationRetrier: waits for memory to come back instead of failing at once.
//
// An allocator that runs out of memory may succeed a moment later, once
// another thread frees a block. AllocateWithRetry makes one attempt; if it
// fails, it waits until a deadline, retrying each time NotifyDealloc() reports
// a free; after the deadline it makes one final attempt with `verbose` set, so
// only that last failure logs its explanation.
//
//   AllocationRetrier retrier;
//   // `attempt`: the allocator's single try (nullptr when out of memory).
//   void* p = retrier.AllocateWithRetry(
//       [&](bool verbose) { return attempt(bytes, verbose); },
//       absl::Seconds(10));
//   ...
//   // In the allocator's deallocation path, after the memory is free:
//   retrier.NotifyDealloc();
#ifndef TENSORMEM_ALLOC_RETRY_H_
#define TENSORMEM_ALLOC_RETRY_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/time/time.h"

namespace tensormem {

class AllocationRetrier {
 public:
  // Returns the first non-null result of `attempt`, or nullptr when the
  // deadline passes without one. `attempt(false)` runs first and after every
  // wake-up; `attempt(true)` runs exactly once, after the deadline, unless an
  // earlier attempt succeeded. A zero or negative deadline means two attempts
  // and no wait. Frees notified while an attempt runs are not lost: the wait
  // that follows returns at once.
  void* AllocateWithRetry(absl::FunctionRef<void*(bool verbose)> attempt,
                          absl::Duration deadline) ABSL_LOCKS_EXCLUDED(mutex_);

  // Wakes every waiting AllocateWithRetry. Takes no lock when nobody waits.
  // May be called with the caller's own allocator lock held: the retrier
  // never runs `attempt` under its lock.
  void NotifyDealloc() ABSL_LOCKS_EXCLUDED(mutex_);

  // Total time callers spent waiting, summed over threads.
  absl::Duration total_wait() const ABSL_LOCKS_EXCLUDED(mutex_);
  // Number of AllocateWithRetry calls whose first attempt failed.
  int64_t retried_calls() const ABSL_LOCKS_EXCLUDED(mutex_);

 private:
  // std::mutex rather than absl::Mutex: ThreadSanitizer understands it
  // even where Abseil itself was built without instrumentation.
  mutable std::mutex mutex_;
  std::condition_variable memory_returned_;
  // Counts frees, so a waiter can tell whether one happened since its attempt.
  // Atomics, so that a free with nobody waiting takes no lock: a waiter
  // registers in waiters_ before it checks the generation, and a notifier
  // bumps the generation before it checks waiters_, so one of them sees the
  // other.
  std::atomic<uint64_t> dealloc_generation_ = 0;
  std::atomic<int> waiters_ = 0;
  absl::Duration total_wait_ ABSL_GUARDED_BY(mutex_);
  int64_t retried_calls_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_RETRY_H_
