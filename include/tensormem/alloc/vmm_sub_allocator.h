// VmmSubAllocator: one virtual range reserved up front, committed on demand,
// so an allocator's growth stays contiguous with what it already has.
//
// This is what CUDA's virtual memory management and PyTorch's expandable
// segments do on a GPU, done with host pages: Alloc commits pages (read-write)
// and Free gives them back to the kernel (MADV_DONTNEED) and makes them
// inaccessible again; the addresses stay reserved.
//
// Placement rule, chosen for the BFC allocator: a region is cut from the
// *top*, the free range that runs to the end of the reservation, whenever it
// fits there. The top starts where the highest live region ends, so a new
// region is adjacent to the caller's last one and the caller can extend that
// region instead of adding one, however many regions it has freed below.
// Only when the top is too small does Alloc fall back to the lowest free hole
// (still a valid region, just not contiguous). Region sizes are rounded up to
// whole pages (bytes_received reports it), so two regions never share a page
// that one of them could decommit under the other.
//
//   tensormem::VmmSubAllocator vmm(64 * tensormem::kGiB);
//   size_t first_size = 0, second_size = 0;
//   char* first = static_cast<char*>(vmm.Alloc(2 << 20, 256, &first_size));
//   // Right after the first region: second == first + first_size.
//   void* second = vmm.Alloc(4 << 20, 256, &second_size);
#ifndef TENSORMEM_ALLOC_VMM_SUB_ALLOCATOR_H_
#define TENSORMEM_ALLOC_VMM_SUB_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tensormem/alloc/sub_allocator.h"

namespace tensormem {

namespace internal {
class ReservedRegions;
}  // namespace internal

class VmmSubAllocator final : public SubAllocator {
 public:
  // Alignment of BaseAddress().
  static constexpr uint64_t kBaseAlignment = uint64_t{2} << 20;

  // Reserves `capacity` bytes of address space (no memory yet). When that
  // fails, status() says why and every Alloc fails.
  explicit VmmSubAllocator(uint64_t capacity,
                           std::vector<Visitor> alloc_visitors = {},
                           std::vector<Visitor> free_visitors = {});
  ~VmmSubAllocator() override;

  // Commits `bytes` (> 0) rounded up to whole pages, aligned to `alignment`
  // (0 or a power of two), at the top when it fits, else in the lowest hole.
  // nullptr when it fits nowhere or the kernel refuses to commit.
  void* Alloc(size_t bytes, size_t alignment, size_t* bytes_received) override;
  // Decommits a region. A pointer or size that does not match a live region
  // is reported on stderr, counted in misuse_count() and otherwise ignored.
  void Free(void* ptr, size_t bytes) override;
  bool SupportsCoalescing() const override { return true; }
  // Whole pages inside live regions: decommitting gives them back to the
  // kernel and makes them inaccessible, recommitting makes them usable again.
  uint64_t DecommitGranularity() const override { return granularity_; }
  bool Decommit(void* ptr, size_t bytes) override;
  bool Recommit(void* ptr, size_t bytes) override;
  MemoryKind GetMemoryKind() const override {
    return MemoryKind::kHostPageable;
  }
  std::string Name() const override { return "vmm"; }
  const void* BaseAddress() const override;

  // OK when the address space was reserved.
  const absl::Status& status() const;
  uint64_t capacity() const { return capacity_; }
  // Granularity of commits (the page size).
  size_t granularity() const { return granularity_; }
  // Bytes of live regions, less those decommitted.
  uint64_t committed_bytes() const;
  size_t region_count() const;
  int64_t misuse_count() const;

 private:
  const uint64_t capacity_;
  const size_t granularity_;
  // Thread-safe on its own.
  std::unique_ptr<internal::ReservedRegions> regions_;
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_VMM_SUB_ALLOCATOR_H_
