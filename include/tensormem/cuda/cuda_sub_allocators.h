// Sub-allocators that take memory from the CUDA driver.
//
// - "cuda": cuMemAlloc / cuMemFree (device memory, one region per call).
// - "cuda-host": pinned host memory, cuMemHostAlloc / cuMemFreeHost.
// - "cuda-vmm": one virtual range reserved up front (cuMemAddressReserve),
//   backed on demand by physical handles (cuMemCreate + cuMemMap +
//   cuMemSetAccess) in granularity multiples. Regions grow from the top of
//   the range, so each one is contiguous with the last and the BFC allocator
//   merges them; freeing a region unmaps and releases its handle, so the
//   pool can shrink again.
// - "cuda-async": stream-ordered cuMemAllocFromPoolAsync / cuMemFreeAsync on
//   a memory pool of its own, with a configurable release threshold.
//
// Every driver call runs with the device's primary context current. A driver
// failure makes Alloc return nullptr; last_error() says which call failed and
// how ("cuMemCreate(4 MiB, device 0): CUDA_ERROR_OUT_OF_MEMORY").
//
//   CudaSubAllocatorParams params;
//   params.device = 0;
//   absl::StatusOr<std::unique_ptr<SubAllocator>> upstream =
//       CreateCudaSubAllocator("cuda-vmm", params);
//   BfcAllocator allocator(*std::move(upstream), 8 * kGiB);
#ifndef TENSORMEM_CUDA_CUDA_SUB_ALLOCATORS_H_
#define TENSORMEM_CUDA_CUDA_SUB_ALLOCATORS_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tensormem/alloc/sub_allocator.h"
#include "tensormem/cuda/driver.h"

namespace tensormem {

struct CudaSubAllocatorParams {
  int device = 0;
  // cuda-vmm: bytes of address space to reserve; 0 = twice the device memory.
  uint64_t reserve_bytes = 0;
  // cuda-vmm: devices given read-write access (empty = `device` alone).
  std::vector<int> access_devices;
  // cuda-async: pool memory kept at synchronisation points instead of being
  // returned to the driver (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD).
  uint64_t release_threshold = 0;
  // cuda-async: the stream allocations and frees are ordered on (nullptr =
  // the legacy default stream, which orders with every blocking stream).
  CUstream stream = nullptr;
  // nullptr: CudaDriver::Get().
  CudaDriver* driver = nullptr;
  // Called with (region, device, bytes) for every region obtained / returned.
  std::vector<SubAllocator::Visitor> alloc_visitors;
  std::vector<SubAllocator::Visitor> free_visitors;
};

// The kinds CreateCudaSubAllocator knows.
std::vector<std::string_view> CudaSubAllocatorKinds();

// Errors: an unknown kind, no driver, a device that does not exist, or a
// driver call that fails while setting up (reservation, pool).
absl::StatusOr<std::unique_ptr<SubAllocator>> CreateCudaSubAllocator(
    std::string_view kind, const CudaSubAllocatorParams& params);

// Adds the four kinds to the sub-allocator registry (sub_allocator_registry.h),
// so allocator specifications, the CLI and the plug-ins can name them. The
// registry's capacity is cuda-vmm's reservation (0: twice the device memory).
// Idempotent.
void RegisterCudaSubAllocators();

// What the four share: driver, device, error keeping.
class CudaSubAllocatorBase : public SubAllocator {
 public:
  int device() const { return device_; }
  CudaDriver& driver() const { return *driver_; }
  // The last driver failure (OK when none).
  absl::Status last_error() const;
  // Frees the driver refused (double frees, unknown pointers).
  int64_t failed_frees() const;

 protected:
  CudaSubAllocatorBase(CudaDriver* driver, const CudaSubAllocatorParams& params)
      : SubAllocator(params.alloc_visitors, params.free_visitors),
        driver_(driver),
        device_(params.device) {}
  // True for CUDA_SUCCESS; otherwise keeps the error, naming the call.
  bool Succeeded(CUresult result, absl::FunctionRef<std::string()> call);
  // Whether `scope` (this device's, opened by the caller for the call) took;
  // false keeps its error.
  bool Entered(const CudaDeviceScope& scope);
  // Reports a free the driver refused on stderr and counts it.
  void ReportFailedFree(CUresult result, const std::string& call);

 private:
  CudaDriver* const driver_;
  const int device_;
  mutable std::mutex mutex_;
  absl::Status last_error_;
  int64_t failed_frees_ = 0;
};

class CudaMallocSubAllocator final : public CudaSubAllocatorBase {
 public:
  // The driver aligns every cuMemAlloc block at least this much.
  static constexpr size_t kAlignment = 256;
  CudaMallocSubAllocator(CudaDriver* driver,
                         const CudaSubAllocatorParams& params)
      : CudaSubAllocatorBase(driver, params) {}
  // nullptr for alignments above kAlignment.
  void* Alloc(size_t bytes, size_t alignment, size_t* bytes_received) override;
  void Free(void* ptr, size_t bytes) override;
  bool SupportsCoalescing() const override { return false; }
  MemoryKind GetMemoryKind() const override { return MemoryKind::kDevice; }
  std::string Name() const override { return "cuda"; }
};

class CudaHostSubAllocator final : public CudaSubAllocatorBase {
 public:
  // Pinned blocks are whole pages.
  static constexpr size_t kAlignment = 4096;
  CudaHostSubAllocator(CudaDriver* driver, const CudaSubAllocatorParams& params)
      : CudaSubAllocatorBase(driver, params) {}
  void* Alloc(size_t bytes, size_t alignment, size_t* bytes_received) override;
  void Free(void* ptr, size_t bytes) override;
  bool SupportsCoalescing() const override { return false; }
  MemoryKind GetMemoryKind() const override { return MemoryKind::kHostPinned; }
  std::string Name() const override { return "cuda-host"; }
};

}  // namespace tensormem

#endif  // TENSORMEM_CUDA_CUDA_SUB_ALLOCATORS_H_
