#include "tensormem/cuda/driver.h"

#include <dlfcn.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "tensormem/core/status_macros.h"

namespace tensormem {
namespace {

// Stringizes after macro expansion, so cuMemAlloc becomes "cuMemAlloc_v2".
#define TENSORMEM_CUDA_STRINGIZE_INNER(name) #name
#define TENSORMEM_CUDA_STRINGIZE(name) TENSORMEM_CUDA_STRINGIZE_INNER(name)

absl::StatusCode CodeFor(CUresult result) {
  switch (result) {
    case CUDA_ERROR_OUT_OF_MEMORY:
      return absl::StatusCode::kResourceExhausted;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_HANDLE:
      return absl::StatusCode::kInvalidArgument;
    case CUDA_ERROR_NOT_SUPPORTED:
      return absl::StatusCode::kUnimplemented;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

std::string DescribeBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return absl::StrCat(bytes, " ", kUnits[unit]);
}

absl::StatusOr<std::unique_ptr<CudaDriver>> CudaDriver::Load(
    const std::string& path) {
  // RTLD_NODELETE: memory the driver handed out stays valid until exit.
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (library == nullptr) {
    const char* reason = dlerror();
    return absl::NotFoundError(
        absl::StrCat("no CUDA driver found: ", reason ? reason : path));
  }
  std::unique_ptr<CudaDriver> driver(new CudaDriver(library, path));
#define TENSORMEM_CUDA_RESOLVE_ENTRY(name)                                   \
  driver->api_.name = reinterpret_cast<decltype(driver->api_.name)>(         \
      dlsym(library, TENSORMEM_CUDA_STRINGIZE(name)));                       \
  if (driver->api_.name == nullptr) {                                        \
    return absl::NotFoundError(                                              \
        absl::StrCat("CUDA driver ", path, " lacks the entry point ",        \
                     TENSORMEM_CUDA_STRINGIZE(name), " (driver too old?)")); \
  }
  TENSORMEM_CUDA_ENTRY_POINTS(TENSORMEM_CUDA_RESOLVE_ENTRY)
#undef TENSORMEM_CUDA_RESOLVE_ENTRY
  TM_RETURN_IF_ERROR(driver->Check(driver->api_.cuInit(0), "cuInit"));
  return driver;
}

absl::StatusOr<CudaDriver*> CudaDriver::Get() {
  // Leaked on purpose: device memory may be freed during static destruction.
  static absl::StatusOr<CudaDriver*>* const loaded = [] {
    const char* configured = std::getenv("TENSORMEM_CUDA_DRIVER");
    const std::string path = configured != nullptr && *configured != '\0'
                                 ? configured
                                 : "libcuda.so.1";
    absl::StatusOr<std::unique_ptr<CudaDriver>> driver = Load(path);
    if (!driver.ok()) {
      return new absl::StatusOr<CudaDriver*>(driver.status());
    }
    return new absl::StatusOr<CudaDriver*>(driver->release());
  }();
  return *loaded;
}

std::string CudaDriver::ErrorName(CUresult result) const {
  const char* name = nullptr;
  if (api_.cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) {
    return absl::StrCat("CUDA error ", static_cast<int>(result));
  }
  return name;
}

absl::Status CudaDriver::Check(CUresult result, std::string_view call) const {
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  return absl::Status(CodeFor(result),
                      absl::StrCat(std::string(call), ": ", ErrorName(result)));
}

absl::StatusOr<int> CudaDriver::DeviceCount() const {
  int count = 0;
  TM_RETURN_IF_ERROR(Check(api_.cuDeviceGetCount(&count), "cuDeviceGetCount"));
  return count;
}

absl::StatusOr<CUdevice> CudaDriver::Device(int device) const {
  TM_ASSIGN_OR_RETURN(const int count, DeviceCount());
  if (device < 0 || device >= count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CUDA device ", device, " does not exist (", count, " devices)"));
  }
  CUdevice handle = 0;
  TM_RETURN_IF_ERROR(Check(api_.cuDeviceGet(&handle, device),
                           absl::StrCat("cuDeviceGet(", device, ")")));
  return handle;
}

absl::Status CudaDriver::MakeCurrent(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (device >= 0 && device < static_cast<int>(contexts_.size()) &&
      contexts_[device] != nullptr) {
    return Check(api_.cuCtxSetCurrent(contexts_[device]),
                 absl::StrCat("cuCtxSetCurrent(device ", device, ")"));
  }
  TM_ASSIGN_OR_RETURN(const CUdevice handle, Device(device));
  CUcontext context = nullptr;
  TM_RETURN_IF_ERROR(
      Check(api_.cuDevicePrimaryCtxRetain(&context, handle),
            absl::StrCat("cuDevicePrimaryCtxRetain(device ", device, ")")));
  if (static_cast<int>(contexts_.size()) <= device) {
    contexts_.resize(device + 1, nullptr);
  }
  contexts_[device] = context;
  return Check(api_.cuCtxSetCurrent(context),
               absl::StrCat("cuCtxSetCurrent(device ", device, ")"));
}

absl::StatusOr<uint64_t> CudaDriver::TotalMemory(int device) const {
  TM_ASSIGN_OR_RETURN(const CUdevice handle, Device(device));
  size_t bytes = 0;
  TM_RETURN_IF_ERROR(
      Check(api_.cuDeviceTotalMem(&bytes, handle),
            absl::StrCat("cuDeviceTotalMem(device ", device, ")")));
  return bytes;
}

absl::StatusOr<uint64_t> CudaDriver::FreeMemory(int device) {
  const CudaDeviceScope scope(*this, device);
  TM_RETURN_IF_ERROR(scope.status());
  size_t free_bytes = 0, total_bytes = 0;
  TM_RETURN_IF_ERROR(Check(api_.cuMemGetInfo(&free_bytes, &total_bytes),
                           absl::StrCat("cuMemGetInfo(device ", device, ")")));
  return free_bytes;
}

absl::StatusOr<int> CudaDriver::ComputeCapabilityMajor(int device) const {
  TM_ASSIGN_OR_RETURN(const CUdevice handle, Device(device));
  int major = 0;
  TM_RETURN_IF_ERROR(
      Check(api_.cuDeviceGetAttribute(
                &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle),
            absl::StrCat("cuDeviceGetAttribute(compute capability, device ",
                         device, ")")));
  return major;
}

CudaDeviceScope::CudaDeviceScope(CudaDriver& driver, int device)
    : driver_(driver) {
  restore_ = driver.api().cuCtxGetCurrent(&previous_) == CUDA_SUCCESS;
  status_ = driver.MakeCurrent(device);
}

CudaDeviceScope::~CudaDeviceScope() {
  CUcontext now = nullptr;
  if (restore_ && driver_.api().cuCtxGetCurrent(&now) == CUDA_SUCCESS &&
      now != previous_) {
    driver_.api().cuCtxSetCurrent(previous_);
  }
}

}  // namespace tensormem
