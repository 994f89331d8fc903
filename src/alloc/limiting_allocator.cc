#include "tensormem/alloc/limiting_allocator.h"

namespace tensormem {

void* LimitingAllocator::DoAllocate(size_t bytes, size_t alignment,
                                    int32_t stream) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (bytes > limit_bytes_ - committed_bytes_) return nullptr;
    committed_bytes_ += bytes;  // reserved while the wrapped allocator works
  }
  void* ptr = wrapped_.Allocate(bytes, alignment, stream);
  if (ptr == nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    committed_bytes_ -= bytes;
    return nullptr;
  }
  const size_t charged = wrapped_.AllocatedSize(ptr).value_or(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    committed_bytes_ -= bytes;
    if (charged <= limit_bytes_ - committed_bytes_) {
      committed_bytes_ += charged;
      ledger_.Add(ptr, {.requested = bytes, .charged = charged});
      return ptr;
    }
  }
  // The wrapped allocator rounded the block past the cap: give it back.
  wrapped_.Deallocate(ptr);
  return nullptr;
}

absl::Status LimitingAllocator::DoDeallocate(void* ptr) {
  std::optional<BlockLedger::Block> block;
  {
    // Claim the block first, so two racing frees of it cannot both reach the
    // wrapped allocator.
    std::lock_guard<std::mutex> lock(mutex_);
    block = ledger_.Take(ptr);
  }
  if (!block) return BlockLedger::NotLiveError(ptr, Name());
  absl::Status status = wrapped_.CheckedDeallocate(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!status.ok()) {
    ledger_.Restore(ptr, *block);  // refused: the books stay as they were
    return status;
  }
  committed_bytes_ -= block->charged;
  return absl::OkStatus();
}

std::optional<AllocatorStats> LimitingAllocator::GetStats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  AllocatorStats stats = ledger_.stats();
  stats.bytes_limit = limit_bytes_;
  return stats;
}

bool LimitingAllocator::ClearStats() {
  std::lock_guard<std::mutex> lock(mutex_);
  ledger_.ClearStats();
  return true;
}

std::optional<size_t> LimitingAllocator::RequestedSize(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ledger_.RequestedSize(ptr);
}

std::optional<size_t> LimitingAllocator::AllocatedSize(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ledger_.ChargedSize(ptr);
}

}  // namespace tensormem
