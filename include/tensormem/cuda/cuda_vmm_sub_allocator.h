// CudaVmmSubAllocator ("cuda-vmm"): device memory through CUDA's virtual
// memory management, growing contiguously and shrinking again.
//
// One address range is reserved at creation. Alloc backs `bytes` (rounded up
// to the allocation granularity, 2 MiB on current GPUs) with physical memory
// mapped at the top of what is in use, so successive regions touch and the
// BFC allocator extends its last region instead of adding one. Free unmaps
// and releases a region's memory: it goes back to the driver, the addresses
// stay reserved. The destructor releases whatever is left and the
// reservation.
//
// Regions of up to kMaxGranuleHandles granules get a physical handle per
// granule, so that any whole granules inside them can be given back
// (Decommit) and backed again (Recommit) while the rest stays mapped: what
// the `tight` policy does with the holes it leaves. A larger region is one
// handle (fewer driver calls for a pool taken at once), and decommitting
// inside it is refused.
//
//   absl::StatusOr<std::unique_ptr<CudaVmmSubAllocator>> vmm =
//       CudaVmmSubAllocator::Create(params);  // reserves 2x device memory
//   size_t got = 0;
//   void* first = (*vmm)->Alloc(2 << 20, 256, &got);
//   void* second = (*vmm)->Alloc(4 << 20, 256, &got);  // first + 2 MiB
#ifndef TENSORMEM_CUDA_CUDA_VMM_SUB_ALLOCATOR_H_
#define TENSORMEM_CUDA_CUDA_VMM_SUB_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "tensormem/cuda/cuda_sub_allocators.h"

namespace tensormem {

namespace internal {
class FreeRangeMap;
}  // namespace internal

class CudaVmmSubAllocator final : public CudaSubAllocatorBase {
 public:
  // Errors: no driver, a bad device, or a reservation the driver refuses.
  static absl::StatusOr<std::unique_ptr<CudaVmmSubAllocator>> Create(
      const CudaSubAllocatorParams& params);
  ~CudaVmmSubAllocator() override;

  // `alignment` may be any power of two up to the granularity.
  void* Alloc(size_t bytes, size_t alignment, size_t* bytes_received) override;
  // Unmaps and releases the region Alloc returned at `ptr` (its size must
  // match), decommitted granules included; anything else is reported and
  // counted in failed_frees().
  void Free(void* ptr, size_t bytes) override;
  // Whole granules inside one region of per-granule handles, all mapped
  // (Decommit) or all decommitted (Recommit); anything else is refused,
  // reported and counted in failed_frees(). A Recommit the driver fails
  // undoes what it did and returns false; an unmap the driver refuses is
  // reported, and that granule is never handed out again.
  uint64_t DecommitGranularity() const override { return granularity_; }
  // Unmapping waits for the device (cuCtxSynchronize), kernels may use it.
  bool DecommitWaitsForDevice() const override { return true; }
  bool Decommit(void* ptr, size_t bytes) override;
  bool Recommit(void* ptr, size_t bytes) override;
  bool SupportsCoalescing() const override { return true; }
  MemoryKind GetMemoryKind() const override { return MemoryKind::kDevice; }
  std::string Name() const override { return "cuda-vmm"; }
  const void* BaseAddress() const override {
    return reinterpret_cast<const void*>(base_);
  }

  static constexpr uint64_t kMaxGranuleHandles = 512;

  uint64_t granularity() const { return granularity_; }
  uint64_t reserved_bytes() const { return reserved_; }
  uint64_t mapped_bytes() const;
  size_t handle_count() const;  // physical handles mapped
  size_t region_count() const;  // regions handed out and not freed

 private:
  struct Mapping {
    uint64_t size;
    CUmemGenericAllocationHandle handle;
  };
  struct Region {
    uint64_t size;
    bool handle_per_granule;
  };

  CudaVmmSubAllocator(CudaDriver* driver, const CudaSubAllocatorParams& params,
                      std::vector<int> access_devices, CUdeviceptr base,
                      uint64_t reserved, uint64_t granularity);
  // Maps new memory over [start, start + size) in handles of `handle_size`
  // bytes and opens it to the access devices; undoes what it did on error.
  bool Back(uintptr_t start, uint64_t size, uint64_t handle_size)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  bool MapNew(uintptr_t start, uint64_t size)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  bool SetAccess(uintptr_t start, uint64_t size);
  // Waits until the device has run every queued kernel (cuCtxSynchronize);
  // false, reported, if the driver fails.
  bool WaitForQueuedWork(const char* why, uint64_t bytes);
  // Unmaps and releases the mappings inside [start, start + size); false if
  // any could not be unmapped (those stay mapped and counted).
  bool Unback(uintptr_t start, uint64_t size)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Maps a new handle on every granule of the range that has none.
  void RemapUnmappedGranules(uintptr_t start, uint64_t size)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Whether [start, start + size) lies in adjacent regions with a handle per
  // granule, and every granule in it is mapped (`mapped`) or none is.
  bool CanChange(uintptr_t start, uint64_t size, bool mapped) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // CanChange, reporting and counting a refusal in failed_frees().
  bool CheckChange(uintptr_t start, uint64_t size, bool mapped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const std::vector<int> access_devices_;
  const CUdeviceptr base_;
  const uint64_t reserved_;
  const uint64_t granularity_;
  mutable std::mutex mutex_;
  std::unique_ptr<internal::FreeRangeMap> free_ranges_ ABSL_GUARDED_BY(mutex_);
  std::map<uintptr_t, Region> regions_ ABSL_GUARDED_BY(mutex_);
  std::map<uintptr_t, Mapping> mappings_ ABSL_GUARDED_BY(mutex_);
  uint64_t mapped_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace tensormem

#endif  // TENSORMEM_CUDA_CUDA_VMM_SUB_ALLOCATOR_H_
