// GpuBfcOptions: TensorFlow's GPU memory options and environment, and the
// allocators they make (one BFC per device plus a pinned host one).
//
// The rules follow TensorFlow's GPU process state:
// - allow_growth (default false: the whole limit is taken at the first
//   allocation); TF_FORCE_GPU_ALLOW_GROWTH overrides it when it is exactly
//   "true" or "false"; any other value is reported (warnings) and ignored.
// - the device memory limit: memory_limit_bytes when set (a virtual device's
//   limit), else per_process_gpu_memory_fraction x total memory when the
//   fraction is > 0, else free memory minus a reserve for the system
//   (TF_DEVICE_MIN_SYS_MEMORY_IN_MB, or 225 MiB below 2 GiB free, else 500 /
//   1050 / 1536 MiB for compute capability <= 6 / 7 / 8+).
// - TF_ENABLE_GPU_GARBAGE_COLLECTION (default true; "true"/"1"/"false"/"0").
// - TF_GPU_ALLOCATOR=cuda_malloc_async: device memory from a stream-ordered
//   pool (cuda-async) whose release threshold is the limit, else cuda-vmm.
// - the pinned host allocator's limit: TF_GPU_HOST_MEM_LIMIT_IN_MB (default
//   64 GiB), always growing.
//
//   absl::StatusOr<GpuBfcOptions> options =
//       ApplyTensorFlowEnvironment(GpuBfcOptions{}, &std::getenv);
//   for (const std::string& warning : options->warnings) LOG(warning);
//   absl::StatusOr<GpuAllocators> allocators =
//       CreateGpuAllocators(*options, /*driver=*/nullptr);
//   void* p = allocators->device_allocators[0]->Allocate(1 << 20);
#ifndef TENSORMEM_CUDA_GPU_BFC_OPTIONS_H_
#define TENSORMEM_CUDA_GPU_BFC_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/cuda/driver.h"

namespace tensormem {

struct GpuBfcOptions {
  bool allow_growth = false;
  double per_process_gpu_memory_fraction = 0;
  uint64_t memory_limit_bytes = 0;  // 0: derived as above
  bool garbage_collection = true;
  std::string sub_allocator = "cuda-vmm";  // or "cuda-async", "cuda"
  // 0: TensorFlow's heuristic (see MinSystemMemory).
  uint64_t min_system_memory = 0;
  uint64_t host_memory_limit = uint64_t{64} << 30;
  // Devices to serve; empty = every device.
  std::vector<int> devices;
  // Environment values that were ignored, and why.
  std::vector<std::string> warnings;
};

// Applies the TF_* variables read through `getenv`. Errors name the variable
// and its value (a malformed number or boolean).
absl::StatusOr<GpuBfcOptions> ApplyTensorFlowEnvironment(
    GpuBfcOptions options,
    const std::function<const char*(const char*)>& getenv);

// Bytes left to the system on a device with `available` free bytes.
uint64_t MinSystemMemory(uint64_t available, int compute_capability_major);

struct GpuDeviceFacts {
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
  int compute_capability_major = 0;
};
// The device's memory limit. Errors: a fraction outside (0, 1] (above 1
// needs unified memory, which tensormem does not use) or nothing left after
// the reserve.
absl::StatusOr<uint64_t> DeviceMemoryLimit(const GpuBfcOptions& options,
                                           const GpuDeviceFacts& device);

struct GpuAllocators {
  std::vector<int> devices;  // in the order below
  std::vector<std::unique_ptr<BfcAllocator>> device_allocators;
  std::unique_ptr<BfcAllocator> pinned_host;  // cuda-host, device 0
};

// One BFC allocator per device (named "GPU_<n>_bfc" as in TensorFlow) and
// the pinned host one ("gpu_host_bfc"). `driver` nullptr: CudaDriver::Get().
absl::StatusOr<GpuAllocators> CreateGpuAllocators(const GpuBfcOptions& options,
                                                  CudaDriver* driver);

}  // namespace tensormem

#endif  // TENSORMEM_CUDA_GPU_BFC_OPTIONS_H_
