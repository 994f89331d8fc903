// HostSubAllocator: regions of aligned host memory from the C library.
//
// The simplest upstream: every region is an independent posix_memalign block,
// so regions are never contiguous and the caller cannot coalesce them.
//
//   auto upstream = std::make_unique<tensormem::HostSubAllocator>();
//   size_t received = 0;
//   void* region = upstream->Alloc(2 * tensormem::kMiB, 256, &received);
//   ...
//   upstream->Free(region, received);
#ifndef TENSORMEM_ALLOC_HOST_SUB_ALLOCATOR_H_
#define TENSORMEM_ALLOC_HOST_SUB_ALLOCATOR_H_

#include <cstddef>
#include <string>
#include <vector>

#include "tensormem/alloc/sub_allocator.h"

namespace tensormem {

class HostSubAllocator final : public SubAllocator {
 public:
  explicit HostSubAllocator(std::vector<Visitor> alloc_visitors = {},
                            std::vector<Visitor> free_visitors = {})
      : SubAllocator(std::move(alloc_visitors), std::move(free_visitors)) {}

  // Returns exactly `bytes` bytes (> 0) aligned to `alignment` (0 or a power
  // of two), or nullptr when the C library refuses or the arguments are bad.
  void* Alloc(size_t bytes, size_t alignment, size_t* bytes_received) override;
  void Free(void* ptr, size_t bytes) override;
  bool SupportsCoalescing() const override { return false; }
  MemoryKind GetMemoryKind() const override {
    return MemoryKind::kHostPageable;
  }
  std::string Name() const override { return "host"; }
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_HOST_SUB_ALLOCATOR_H_
