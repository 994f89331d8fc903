// CudaVmmSubAllocator ("cuda-vmm"): device memory through CUDA's virtual
// memory management, growing contiguously and shrinking again.
//
// One address range is reserved at creation. Alloc backs `bytes` (rounded up
// to the allocation granularity, 2 MiB on current GPUs) with a physical
// handle mapped at the top of what is in use, so successive regions touch and
// the BFC allocator extends its last region instead of adding one. Free
// unmaps and releases the region's handle: memory goes back to the driver,
// the addresses stay reserved. The destructor releases whatever is left and
// the reservation.
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
  // match); anything else is reported and counted in failed_frees().
  void Free(void* ptr, size_t bytes) override;
  bool SupportsCoalescing() const override { return true; }
  MemoryKind GetMemoryKind() const override { return MemoryKind::kDevice; }
  std::string Name() const override { return "cuda-vmm"; }
  const void* BaseAddress() const override {
    return reinterpret_cast<const void*>(base_);
  }

  uint64_t granularity() const { return granularity_; }
  uint64_t reserved_bytes() const { return reserved_; }
  uint64_t mapped_bytes() const;
  size_t handle_count() const;

 private:
  struct Mapping {
    uint64_t size;
    CUmemGenericAllocationHandle handle;
  };

  CudaVmmSubAllocator(CudaDriver* driver, const CudaSubAllocatorParams& params,
                      std::vector<int> access_devices, CUdeviceptr base,
                      uint64_t reserved, uint64_t granularity);
  // Creates, maps and opens a handle at `start`; undoes what it did on error.
  bool Back(uintptr_t start, uint64_t size, CUmemGenericAllocationHandle* out);
  void Unback(uintptr_t start, const Mapping& mapping);

  const std::vector<int> access_devices_;
  const CUdeviceptr base_;
  const uint64_t reserved_;
  const uint64_t granularity_;
  mutable std::mutex mutex_;
  std::unique_ptr<internal::FreeRangeMap> free_ranges_;  // guarded by mutex_
  std::map<uintptr_t, Mapping> live_;                    // guarded by mutex_
  uint64_t mapped_bytes_ = 0;                            // guarded by mutex_
};

}  // namespace tensormem

#endif  // TENSORMEM_CUDA_CUDA_VMM_SUB_ALLOCATOR_H_
