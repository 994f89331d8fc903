// CudaAsyncSubAllocator ("cuda-async"): stream-ordered allocation from a
// CUDA memory pool of its own (cuMemAllocFromPoolAsync / cuMemFreeAsync).
//
// The pool keeps freed memory for reuse; at synchronisation points the driver
// returns what it holds above the release threshold. Regions serve blocks on
// any stream, and the pool's stream (params.stream, the legacy stream by
// default) orders with none of PyTorch's, so Alloc returns a region once its
// allocation has completed and Free drains the device before the region goes
// back to the pool (both rare: a BFC allocator asks for regions, not blocks).
// Trim() gives unused pool memory back now.
//
//   CudaSubAllocatorParams params;
//   params.release_threshold = 1 << 30;  // keep up to 1 GiB between steps
//   absl::StatusOr<std::unique_ptr<CudaAsyncSubAllocator>> pool =
//       CudaAsyncSubAllocator::Create(params);
#ifndef TENSORMEM_CUDA_CUDA_ASYNC_SUB_ALLOCATOR_H_
#define TENSORMEM_CUDA_CUDA_ASYNC_SUB_ALLOCATOR_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tensormem/cuda/cuda_sub_allocators.h"

namespace tensormem {

class CudaAsyncSubAllocator final : public CudaSubAllocatorBase {
 public:
  static constexpr size_t kAlignment = 256;

  // Errors: no driver, a bad device, or a pool the driver refuses.
  static absl::StatusOr<std::unique_ptr<CudaAsyncSubAllocator>> Create(
      const CudaSubAllocatorParams& params);
  // Destroys the pool; regions still live keep their memory until freed.
  ~CudaAsyncSubAllocator() override;

  void* Alloc(size_t bytes, size_t alignment, size_t* bytes_received) override;
  void Free(void* ptr, size_t bytes) override;
  bool SupportsCoalescing() const override { return false; }
  MemoryKind GetMemoryKind() const override { return MemoryKind::kDevice; }
  std::string Name() const override { return "cuda-async"; }

  // Returns pool memory not in use to the driver.
  absl::Status Trim();
  // What the pool holds from the driver, and what of it is in use.
  absl::StatusOr<uint64_t> ReservedBytes();
  absl::StatusOr<uint64_t> UsedBytes();
  uint64_t release_threshold() const { return release_threshold_; }

 private:
  CudaAsyncSubAllocator(CudaDriver* driver,
                        const CudaSubAllocatorParams& params, CUmemoryPool pool)
      : CudaSubAllocatorBase(driver, params),
        pool_(pool),
        stream_(params.stream),
        release_threshold_(params.release_threshold) {}
  absl::StatusOr<uint64_t> PoolAttribute(CUmemPool_attribute attribute,
                                         const char* what);

  const CUmemoryPool pool_;
  const CUstream stream_;
  const uint64_t release_threshold_;
};

}  // namespace tensormem

#endif  // TENSORMEM_CUDA_CUDA_ASYNC_SUB_ALLOCATOR_H_
