// TrackingAllocator: charges the allocations made through it to one scope.
//
// A scope is, for example, one operator execution: the tracker counts the
// bytes it allocated, the most it held at once and what is still
// outstanding. Blocks often outlive their scope (an op's output is freed much
// later), so after Close() the tracker still counts deallocations, and it
// keeps itself alive, through shared ownership, until the last of its blocks
// is freed, even when every other owner has let go of it.
//
//   BfcAllocator bfc(std::make_unique<SimulatedSubAllocator>(kGiB), kGiB);
//   std::shared_ptr<TrackingAllocator> tracker =
//       TrackingAllocator::Create(bfc);
//   void* output = tracker->Allocate(4096);
//   TrackingSummary at_close = tracker->Close();
//   Allocator* keep = tracker.get();
//   tracker.reset();           // the tracker stays alive for `output`
//   keep->Deallocate(output);  // counted, then the tracker goes away
#ifndef TENSORMEM_ALLOC_TRACKING_ALLOCATOR_H_
#define TENSORMEM_ALLOC_TRACKING_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "tensormem/alloc/allocator.h"
#include "tensormem/alloc/block_ledger.h"

namespace tensormem {

// Bytes are the wrapped allocator's AllocatedSize when it knows it, else the
// requested size.
struct TrackingSummary {
  uint64_t total_bytes = 0;     // allocated through the tracker, ever
  uint64_t high_watermark = 0;  // most bytes outstanding at once
  uint64_t outstanding_bytes = 0;
  int64_t outstanding_allocations = 0;
  int64_t num_allocs = 0;
  int64_t num_deallocs = 0;
  int64_t deallocs_after_close = 0;
};

class TrackingAllocator final
    : public Allocator,
      public std::enable_shared_from_this<TrackingAllocator> {
 public:
  // `wrapped` must outlive the tracker and every block allocated through it.
  static std::shared_ptr<TrackingAllocator> Create(Allocator& wrapped);

  std::string Name() const override {
    return "tracking(" + wrapped_.Name() + ")";
  }

  // Ends the scope and returns its summary. Later allocations through the
  // tracker fail (return nullptr); later deallocations are still counted.
  TrackingSummary Close() ABSL_LOCKS_EXCLUDED(mutex_);
  bool closed() const ABSL_LOCKS_EXCLUDED(mutex_);
  // The summary now, including deallocations after Close().
  TrackingSummary Summary() const ABSL_LOCKS_EXCLUDED(mutex_);

  // The wrapped allocator's statistics.
  std::optional<AllocatorStats> GetStats() const override {
    return wrapped_.GetStats();
  }
  // Sizes of the tracker's own live blocks; nullopt for any other pointer.
  std::optional<size_t> RequestedSize(const void* ptr) const override
      ABSL_LOCKS_EXCLUDED(mutex_);
  std::optional<size_t> AllocatedSize(const void* ptr) const override
      ABSL_LOCKS_EXCLUDED(mutex_);

 private:
  explicit TrackingAllocator(Allocator& wrapped) : wrapped_(wrapped) {}

  void* DoAllocate(size_t bytes, size_t alignment, int32_t stream) override
      ABSL_LOCKS_EXCLUDED(mutex_);
  // Misuse (a pointer the tracker did not hand out) changes nothing.
  absl::Status DoDeallocate(void* ptr) override ABSL_LOCKS_EXCLUDED(mutex_);

  Allocator& wrapped_;
  mutable std::mutex mutex_;
  bool closed_ ABSL_GUARDED_BY(mutex_) = false;
  TrackingSummary summary_ ABSL_GUARDED_BY(mutex_);
  // The tracker's own live blocks; its statistics are the summary's.
  BlockLedger ledger_ ABSL_GUARDED_BY(mutex_);
  // Set while blocks are outstanding, so the last deallocation, not the last
  // owner, ends the tracker's life.
  std::shared_ptr<TrackingAllocator> keep_alive_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_TRACKING_ALLOCATOR_H_
