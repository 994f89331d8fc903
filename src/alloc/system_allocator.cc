#include "tensormem/alloc/system_allocator.h"

#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "tensormem/core/checked_math.h"

namespace tensormem {

void* SystemAllocator::DoAllocate(size_t bytes, size_t alignment,
                                  int32_t /*stream*/) {
  if (bytes == 0 || !IsPowerOfTwo(alignment)) return nullptr;
  // No object may be larger than PTRDIFF_MAX; refusing here also keeps
  // sanitizer runtimes from aborting on an absurd size.
  // The same holds for the size plus alignment padding (2^63 alignments).
  if (alignment > PTRDIFF_MAX || bytes > PTRDIFF_MAX - alignment)
    return nullptr;
  // posix_memalign wants a multiple of sizeof(void*); smaller ones are implied.
  void* ptr = nullptr;
  if (posix_memalign(&ptr, std::max(alignment, sizeof(void*)), bytes) != 0)
    return nullptr;
  const size_t allocated = std::max(bytes, malloc_usable_size(ptr));
  std::lock_guard<std::mutex> lock(mutex_);
  ledger_.Add(ptr, {.requested = bytes, .charged = allocated});
  return ptr;
}

absl::Status SystemAllocator::DoDeallocate(void* ptr) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ledger_.Take(ptr)) return BlockLedger::NotLiveError(ptr, Name());
  }
  std::free(ptr);
  return absl::OkStatus();
}

std::optional<AllocatorStats> SystemAllocator::GetStats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ledger_.stats();
}

bool SystemAllocator::ClearStats() {
  std::lock_guard<std::mutex> lock(mutex_);
  ledger_.ClearStats();
  return true;
}

std::optional<size_t> SystemAllocator::RequestedSize(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ledger_.RequestedSize(ptr);
}

std::optional<size_t> SystemAllocator::AllocatedSize(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ledger_.ChargedSize(ptr);
}

}  // namespace tensormem
