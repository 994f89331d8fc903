// SimulatedSubAllocator: address space only, for replaying a big device's
// workload on a small machine.
//
// It reserves `capacity` bytes of address space that is never touched (an
// 80 GiB "GPU" costs no memory on a 24 GiB host), with a base aligned to
// 2 MiB, a GPU's allocation granularity, so an offset (address - base) is as
// aligned as its address. Regions are placed first fit from the base, so the
// same request sequence always yields the same offsets. The memory behind a
// region must never be read or written: it is not accessible.
//
//   tensormem::SimulatedSubAllocator gpu(80 * tensormem::kGiB);
//   size_t received = 0;
//   void* region = gpu.Alloc(2 * tensormem::kMiB, 256, &received);
//   uintptr_t offset = static_cast<char*>(region) -
//                      static_cast<const char*>(gpu.BaseAddress());  // 0
//   gpu.Free(region, received);
#ifndef TENSORMEM_ALLOC_SIMULATED_SUB_ALLOCATOR_H_
#define TENSORMEM_ALLOC_SIMULATED_SUB_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tensormem/alloc/sub_allocator.h"

namespace tensormem {

namespace internal {
class ReservedRegions;
}  // namespace internal

class SimulatedSubAllocator final : public SubAllocator {
 public:
  // Alignment of BaseAddress().
  static constexpr uint64_t kBaseAlignment = uint64_t{2} << 20;

  // Reserves `capacity` bytes. `coalescing` only decides what
  // SupportsCoalescing() reports: with it, a caller may merge regions that
  // happen to be adjacent. When the reservation fails (capacity 0 or too
  // large for the address space), status() says why and every Alloc fails.
  explicit SimulatedSubAllocator(uint64_t capacity, bool coalescing = false,
                                 std::vector<Visitor> alloc_visitors = {},
                                 std::vector<Visitor> free_visitors = {});
  ~SimulatedSubAllocator() override;

  // Returns exactly `bytes` bytes (> 0) at the lowest free address aligned to
  // `alignment` (0 or a power of two), or nullptr when they do not fit.
  void* Alloc(size_t bytes, size_t alignment, size_t* bytes_received) override;
  // Returns a region. A pointer or size that does not match a live region is
  // reported on stderr, counted in misuse_count() and otherwise ignored.
  void Free(void* ptr, size_t bytes) override;
  bool SupportsCoalescing() const override { return coalescing_; }
  // Any range of 256-byte multiples may be decommitted and recommitted; the
  // pages are never touched, so only the books change.
  uint64_t DecommitGranularity() const override { return 256; }
  bool Decommit(void* ptr, size_t bytes) override;
  bool Recommit(void* ptr, size_t bytes) override;
  MemoryKind GetMemoryKind() const override { return MemoryKind::kSimulated; }
  std::string Name() const override { return "simulated"; }
  const void* BaseAddress() const override;

  // OK when the address space was reserved.
  const absl::Status& status() const;
  uint64_t capacity() const { return capacity_; }
  // Bytes of live regions, less those decommitted.
  uint64_t bytes_in_use() const;
  size_t region_count() const;
  int64_t misuse_count() const;

 private:
  const uint64_t capacity_;
  const bool coalescing_;
  // Thread-safe on its own.
  std::unique_ptr<internal::ReservedRegions> regions_;
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_SIMULATED_SUB_ALLOCATOR_H_
