// CudaDriver: the CUDA driver API, loaded at run time.
//
// tensormem never links against libcuda: the driver is opened with dlopen
// ("libcuda.so.1", or the path in TENSORMEM_CUDA_DRIVER) and every entry point
// used is resolved into a table. A machine without a driver gets a Status
// ("no CUDA driver found: ..."), never a crash, so the same binary runs
// everywhere. Driver errors become Statuses naming the call and the error
// ("cuMemCreate(2 MiB, device 0): CUDA_ERROR_OUT_OF_MEMORY").
//
//   absl::StatusOr<CudaDriver*> driver = CudaDriver::Get();
//   if (!driver.ok()) return driver.status();
//   TM_RETURN_IF_ERROR((*driver)->MakeCurrent(/*device=*/0));
//   CUdeviceptr ptr;
//   TM_RETURN_IF_ERROR((*driver)->Check(
//       (*driver)->api().cuMemAlloc(&ptr, 4096), "cuMemAlloc(4 KiB)"));
#ifndef TENSORMEM_CUDA_DRIVER_H_
#define TENSORMEM_CUDA_DRIVER_H_

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tensormem {

// Every driver entry point tensormem calls. cuda.h maps some names to their
// versioned symbols (cuMemAlloc -> cuMemAlloc_v2); the table resolves the
// versioned one, as a program linked against cuda.h would.
// clang-format off
#define TENSORMEM_CUDA_ENTRY_POINTS(X) \
  X(cuInit) \
  X(cuGetErrorName) \
  X(cuDriverGetVersion) \
  X(cuDeviceGetCount) \
  X(cuDeviceGet) \
  X(cuDeviceGetName) \
  X(cuDeviceTotalMem) \
  X(cuDeviceGetAttribute) \
  X(cuDevicePrimaryCtxRetain) \
  X(cuDevicePrimaryCtxRelease) \
  X(cuCtxSetCurrent) \
  X(cuCtxGetCurrent) \
  X(cuCtxSynchronize) \
  X(cuMemGetInfo) \
  X(cuMemAlloc) \
  X(cuMemFree) \
  X(cuMemHostAlloc) \
  X(cuMemFreeHost) \
  X(cuMemGetAllocationGranularity) \
  X(cuMemAddressReserve) \
  X(cuMemAddressFree) \
  X(cuMemCreate) \
  X(cuMemRelease) \
  X(cuMemMap) \
  X(cuMemUnmap) \
  X(cuMemSetAccess) \
  X(cuMemPoolCreate) \
  X(cuMemPoolDestroy) \
  X(cuMemPoolSetAttribute) \
  X(cuMemPoolGetAttribute) \
  X(cuMemPoolTrimTo) \
  X(cuMemAllocFromPoolAsync) \
  X(cuMemFreeAsync) \
  X(cuStreamCreate) \
  X(cuStreamDestroy) \
  X(cuStreamSynchronize) \
  X(cuStreamWaitEvent) \
  X(cuEventCreate) \
  X(cuEventDestroy) \
  X(cuEventRecord) \
  X(cuEventQuery)
// clang-format on

struct CudaDriverApi {
#define TENSORMEM_CUDA_DECLARE_ENTRY(name) decltype(&::name) name = nullptr;
  TENSORMEM_CUDA_ENTRY_POINTS(TENSORMEM_CUDA_DECLARE_ENTRY)
#undef TENSORMEM_CUDA_DECLARE_ENTRY
};

// Sizes as driver messages show them: "2 MiB", "3 GiB", "1000 bytes" (exact,
// the largest unit that divides the size).
std::string DescribeBytes(uint64_t bytes);

class CudaDriver {
 public:
  // The process's driver, loaded and initialised (cuInit) on first use from
  // $TENSORMEM_CUDA_DRIVER or libcuda.so.1. A failure is remembered: later
  // calls return the same Status.
  static absl::StatusOr<CudaDriver*> Get();
  // Loads the driver at `path` (a file name or path for dlopen). The library
  // stays loaded for the life of the process: freed memory may outlive any
  // owner.
  static absl::StatusOr<std::unique_ptr<CudaDriver>> Load(
      const std::string& path);

  const CudaDriverApi& api() const { return api_; }
  const std::string& path() const { return path_; }

  // OK for CUDA_SUCCESS; otherwise "<call>: <CUDA error name>" with a code
  // that fits (out of memory -> kResourceExhausted).
  absl::Status Check(CUresult result, std::string_view call) const;
  std::string ErrorName(CUresult result) const;

  // Makes `device`'s primary context current on the calling thread (retained
  // once per device, for the life of the driver).
  absl::Status MakeCurrent(int device);
  absl::StatusOr<int> DeviceCount() const;
  absl::StatusOr<uint64_t> TotalMemory(int device) const;
  // Free device memory as the driver reports it (cuMemGetInfo).
  absl::StatusOr<uint64_t> FreeMemory(int device);
  absl::StatusOr<int> ComputeCapabilityMajor(int device) const;

 private:
  CudaDriver(void* library, std::string path)
      : library_(library), path_(std::move(path)) {}
  absl::StatusOr<CUdevice> Device(int device) const;

  void* library_;
  std::string path_;
  CudaDriverApi api_;
  std::mutex mutex_;
  std::vector<CUcontext> contexts_;  // per device, retained on first use
};

// Makes `device`'s primary context current for the life of the scope, then
// gives the calling thread back the context it had: a caller working on
// another device (PyTorch freeing a tensor of device 1 while on device 0)
// finds its own current again. status() says whether the device was entered.
//
//   CudaDeviceScope scope(driver, /*device=*/1);
//   if (!scope.status().ok()) return scope.status();
class CudaDeviceScope {
 public:
  CudaDeviceScope(CudaDriver& driver, int device);
  ~CudaDeviceScope();
  CudaDeviceScope(const CudaDeviceScope&) = delete;
  CudaDeviceScope& operator=(const CudaDeviceScope&) = delete;

  const absl::Status& status() const { return status_; }

 private:
  CudaDriver& driver_;
  CUcontext previous_ = nullptr;
  bool restore_ = false;
  absl::Status status_;
};

}  // namespace tensormem

#endif  // TENSORMEM_CUDA_DRIVER_H_
