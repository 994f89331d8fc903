// SharedCounter: a monotone clock for timestamped frees in the BFC allocator.
//
// A stream-ordered runtime (a GPU executor) bumps the counter as it queues
// work. The BFC allocator stamps each freed chunk with `next()`; once the
// runtime knows that all work queued before count c has finished it calls
// `BfcAllocator::SetSafeFrontier(c)`, and chunks freed before c become safe to
// merge and to hand to anyone. Until then only callers whose `freed_before`
// says they wait for that work may reuse them.
//
//   SharedCounter counter;
//   allocator.SetTimingCounter(&counter);
//   allocator.Deallocate(p);                    // stamped counter.next()
//   allocator.SetSafeFrontier(counter.get() + 1);  // everything so far is done
#ifndef TENSORMEM_ALLOC_BFC_SHARED_COUNTER_H_
#define TENSORMEM_ALLOC_BFC_SHARED_COUNTER_H_

#include <atomic>
#include <cstdint>

namespace tensormem {

class SharedCounter {
 public:
  uint64_t get() const { return value_.load(std::memory_order_acquire); }
  // Advances the counter and returns the new value (the first is 1).
  uint64_t next() { return value_.fetch_add(1, std::memory_order_acq_rel) + 1; }

 private:
  std::atomic<uint64_t> value_{0};
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_BFC_SHARED_COUNTER_H_
