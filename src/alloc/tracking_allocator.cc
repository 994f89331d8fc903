#include "tensormem/alloc/tracking_allocator.h"

#include <algorithm>
#include <utility>

namespace tensormem {

std::shared_ptr<TrackingAllocator> TrackingAllocator::Create(
    Allocator& wrapped) {
  return std::shared_ptr<TrackingAllocator>(new TrackingAllocator(wrapped));
}

void* TrackingAllocator::DoAllocate(size_t bytes, size_t alignment,
                                    int32_t stream) {
  if (closed()) return nullptr;
  void* ptr = wrapped_.Allocate(bytes, alignment, stream);
  if (ptr == nullptr) return nullptr;
  const size_t charged = wrapped_.AllocatedSize(ptr).value_or(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closed_) {
      ledger_.Add(ptr, {.requested = bytes, .charged = charged});
      ++summary_.num_allocs;
      ++summary_.outstanding_allocations;
      summary_.total_bytes += charged;
      summary_.outstanding_bytes += charged;
      summary_.high_watermark =
          std::max(summary_.high_watermark, summary_.outstanding_bytes);
      if (keep_alive_ == nullptr) keep_alive_ = weak_from_this().lock();
      return ptr;
    }
  }
  // Closed while the wrapped allocator was working: the block is not ours.
  wrapped_.Deallocate(ptr);
  return nullptr;
}

absl::Status TrackingAllocator::DoDeallocate(void* ptr) {
  std::optional<BlockLedger::Block> block;
  {
    // Claim the block first, so two racing frees of it cannot both reach the
    // wrapped allocator.
    std::lock_guard<std::mutex> lock(mutex_);
    block = ledger_.Take(ptr);
  }
  if (!block) return BlockLedger::NotLiveError(ptr, Name());
  const absl::Status status = wrapped_.CheckedDeallocate(ptr);
  std::shared_ptr<TrackingAllocator> last_reference;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!status.ok()) {
      ledger_.Restore(ptr, *block);  // refused: the books stay as they were
      return status;
    }
    summary_.outstanding_bytes -= block->charged;
    --summary_.outstanding_allocations;
    ++summary_.num_deallocs;
    if (closed_) ++summary_.deallocs_after_close;
    if (summary_.outstanding_allocations == 0)
      last_reference = std::move(keep_alive_);
  }
  // `last_reference` may be the final owner: it destroys the tracker on
  // return, after the lock is released and no member is touched again.
  return absl::OkStatus();
}

TrackingSummary TrackingAllocator::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  return summary_;
}

bool TrackingAllocator::closed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

TrackingSummary TrackingAllocator::Summary() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return summary_;
}

std::optional<size_t> TrackingAllocator::RequestedSize(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ledger_.RequestedSize(ptr);
}

std::optional<size_t> TrackingAllocator::AllocatedSize(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ledger_.ChargedSize(ptr);
}

}  // namespace tensormem
