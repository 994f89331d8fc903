#include "tensormem/alloc/host_sub_allocator.h"

#include <cstdint>
#include <cstdlib>

#include "tensormem/core/checked_math.h"

namespace tensormem {

void* HostSubAllocator::Alloc(size_t bytes, size_t alignment,
                              size_t* bytes_received) {
  *bytes_received = 0;
  if (bytes == 0 || (alignment != 0 && !IsPowerOfTwo(alignment)))
    return nullptr;
  // No object may be larger than PTRDIFF_MAX; refusing here also keeps
  // sanitizer runtimes from aborting on an absurd size.
  if (bytes > PTRDIFF_MAX) return nullptr;
  // The same holds for the size plus alignment padding (2^63 alignments).
  if (alignment > PTRDIFF_MAX || bytes > PTRDIFF_MAX - alignment)
    return nullptr;
  // posix_memalign wants a multiple of sizeof(void*); smaller ones are implied.
  const size_t effective_alignment =
      alignment < sizeof(void*) ? sizeof(void*) : alignment;
  void* ptr = nullptr;
  if (posix_memalign(&ptr, effective_alignment, bytes) != 0) return nullptr;
  *bytes_received = bytes;
  VisitAlloc(ptr, /*index=*/0, bytes);
  return ptr;
}

void HostSubAllocator::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  VisitFree(ptr, /*index=*/0, bytes);
  std::free(ptr);
}

}  // namespace tensormem
