#include "tensormem/alloc/limiting_allocator.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace tensormem {

void* LimitingAllocator::DoAllocate(size_t bytes, size_t alignment) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (bytes > limit_bytes_ - committed_bytes_) return nullptr;
    committed_bytes_ += bytes;  // reserved while the wrapped allocator works
  }
  void* ptr = wrapped_.Allocate(bytes, alignment);
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
      blocks_.emplace(ptr, Block{bytes, charged});
      ++stats_.num_allocs;
      stats_.bytes_in_use += charged;
      stats_.peak_bytes_in_use =
          std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
      stats_.largest_alloc_size =
          std::max<uint64_t>(stats_.largest_alloc_size, charged);
      stats_.pool_bytes = stats_.bytes_in_use;
      stats_.peak_pool_bytes =
          std::max(stats_.peak_pool_bytes, stats_.pool_bytes);
      return ptr;
    }
  }
  // The wrapped allocator rounded the block past the cap: give it back.
  wrapped_.Deallocate(ptr);
  return nullptr;
}

absl::Status LimitingAllocator::DoDeallocate(void* ptr) {
  Block block;
  {
    // Claim the block first, so two racing frees of it cannot both reach the
    // wrapped allocator.
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(ptr);
    if (it == blocks_.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("free of %p, which is not a live block of %s (never "
                          "allocated through it, interior, "
                          "or already freed)",
                          ptr, Name()));
    }
    block = it->second;
    blocks_.erase(it);
  }
  if (absl::Status status = wrapped_.CheckedDeallocate(ptr); !status.ok()) {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_.emplace(ptr, block);  // refused: the books stay as they were
    return status;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  committed_bytes_ -= block.charged;
  stats_.bytes_in_use -= block.charged;
  stats_.pool_bytes = stats_.bytes_in_use;
  return absl::OkStatus();
}

std::optional<AllocatorStats> LimitingAllocator::GetStats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  AllocatorStats stats = stats_;
  stats.bytes_limit = limit_bytes_;
  return stats;
}

bool LimitingAllocator::ClearStats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.num_allocs = 0;
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
  stats_.largest_alloc_size = 0;
  stats_.peak_pool_bytes = stats_.pool_bytes;
  return true;
}

std::optional<size_t> LimitingAllocator::RequestedSize(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(ptr);
  if (it == blocks_.end()) return std::nullopt;
  return it->second.requested;
}

std::optional<size_t> LimitingAllocator::AllocatedSize(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(ptr);
  if (it == blocks_.end()) return std::nullopt;
  return it->second.charged;
}

}  // namespace tensormem
