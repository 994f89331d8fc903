#include "tensormem/alloc/system_allocator.h"

#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/str_format.h"
#include "tensormem/core/checked_math.h"

namespace tensormem {

void* SystemAllocator::DoAllocate(size_t bytes, size_t alignment) {
  if (bytes == 0 || !IsPowerOfTwo(alignment)) return nullptr;
  // No object may be larger than PTRDIFF_MAX; refusing here also keeps
  // sanitizer runtimes from aborting on an absurd size.
  if (bytes > PTRDIFF_MAX) return nullptr;
  // posix_memalign wants a multiple of sizeof(void*); smaller ones are implied.
  void* ptr = nullptr;
  if (posix_memalign(&ptr, std::max(alignment, sizeof(void*)), bytes) != 0)
    return nullptr;
  const size_t allocated = std::max(bytes, malloc_usable_size(ptr));
  std::lock_guard<std::mutex> lock(mutex_);
  blocks_.emplace(ptr, Block{bytes, allocated});
  ++stats_.num_allocs;
  stats_.bytes_in_use += allocated;
  stats_.peak_bytes_in_use =
      std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  stats_.largest_alloc_size =
      std::max<uint64_t>(stats_.largest_alloc_size, allocated);
  stats_.pool_bytes = stats_.bytes_in_use;
  stats_.peak_pool_bytes = std::max(stats_.peak_pool_bytes, stats_.pool_bytes);
  return ptr;
}

absl::Status SystemAllocator::DoDeallocate(void* ptr) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(ptr);
    if (it == blocks_.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("free of %p, which is not a live block of this "
                          "allocator (never allocated here, "
                          "interior, or already freed)",
                          ptr));
    }
    stats_.bytes_in_use -= it->second.allocated;
    stats_.pool_bytes = stats_.bytes_in_use;
    blocks_.erase(it);
  }
  std::free(ptr);
  return absl::OkStatus();
}

std::optional<AllocatorStats> SystemAllocator::GetStats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

bool SystemAllocator::ClearStats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.num_allocs = 0;
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
  stats_.largest_alloc_size = 0;
  stats_.peak_pool_bytes = stats_.pool_bytes;
  return true;
}

std::optional<size_t> SystemAllocator::RequestedSize(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(ptr);
  if (it == blocks_.end()) return std::nullopt;
  return it->second.requested;
}

std::optional<size_t> SystemAllocator::AllocatedSize(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(ptr);
  if (it == blocks_.end()) return std::nullopt;
  return it->second.allocated;
}

}  // namespace tensormem
