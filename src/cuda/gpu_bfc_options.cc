#include "tensormem/cuda/gpu_bfc_options.h"

#include <cmath>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/core/units.h"
#include "tensormem/cuda/cuda_sub_allocators.h"

namespace tensormem {
namespace {

absl::Status ReadMebibytes(const char* name, const char* text, uint64_t* out) {
  uint64_t mebibytes = 0;
  if (!absl::SimpleAtoi(text, &mebibytes) || mebibytes > (uint64_t{1} << 40)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "=", text, ": expected a whole number of MiB"));
  }
  *out = mebibytes * kMiB;
  return absl::OkStatus();
}

// TensorFlow's boolean variables: true/1 and false/0, any case.
absl::Status ReadBool(const char* name, const char* text, bool* out) {
  const std::string value = absl::AsciiStrToLower(text);
  if (value == "true" || value == "1") {
    *out = true;
  } else if (value == "false" || value == "0") {
    *out = false;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "=", text, ": expected true, false, 1 or 0"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GpuBfcOptions> ApplyTensorFlowEnvironment(
    GpuBfcOptions options,
    const std::function<const char*(const char*)>& getenv) {
  if (const char* growth = getenv("TF_FORCE_GPU_ALLOW_GROWTH")) {
    // Exactly "true" or "false", as TensorFlow compares them.
    if (std::string_view(growth) == "true") {
      options.allow_growth = true;
    } else if (std::string_view(growth) == "false") {
      options.allow_growth = false;
    } else {
      options.warnings.push_back(absl::StrCat(
          "TF_FORCE_GPU_ALLOW_GROWTH=", growth,
          " is neither \"true\" nor \"false\": ignored, allow_growth stays ",
          options.allow_growth ? "true" : "false"));
    }
  }
  if (const char* gc = getenv("TF_ENABLE_GPU_GARBAGE_COLLECTION")) {
    TM_RETURN_IF_ERROR(ReadBool("TF_ENABLE_GPU_GARBAGE_COLLECTION", gc,
                                &options.garbage_collection));
  }
  if (const char* reserve = getenv("TF_DEVICE_MIN_SYS_MEMORY_IN_MB")) {
    TM_RETURN_IF_ERROR(ReadMebibytes("TF_DEVICE_MIN_SYS_MEMORY_IN_MB", reserve,
                                     &options.min_system_memory));
  }
  if (const char* host = getenv("TF_GPU_HOST_MEM_LIMIT_IN_MB")) {
    TM_RETURN_IF_ERROR(ReadMebibytes("TF_GPU_HOST_MEM_LIMIT_IN_MB", host,
                                     &options.host_memory_limit));
  }
  if (const char* allocator = getenv("TF_GPU_ALLOCATOR")) {
    if (std::string_view(allocator) == "cuda_malloc_async") {
      options.sub_allocator = "cuda-async";
    } else if (*allocator != '\0') {
      options.warnings.push_back(
          absl::StrCat("TF_GPU_ALLOCATOR=", allocator,
                       " is not \"cuda_malloc_async\": ignored"));
    }
  }
  return options;
}

uint64_t MinSystemMemory(uint64_t available, int compute_capability_major) {
  if (available < 2 * kGiB) return 225 * kMiB;
  if (compute_capability_major <= 6) return 500 * kMiB;
  if (compute_capability_major <= 7) return 1050 * kMiB;
  return 1536 * kMiB;
}

absl::StatusOr<uint64_t> DeviceMemoryLimit(const GpuBfcOptions& options,
                                           const GpuDeviceFacts& device) {
  if (options.memory_limit_bytes > 0) return options.memory_limit_bytes;
  const double fraction = options.per_process_gpu_memory_fraction;
  if (!(fraction >= 0) || fraction > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "per_process_gpu_memory_fraction=", fraction,
        ": must be in [0, 1] (above 1 needs unified memory, not supported)"));
  }
  if (fraction > 0) {
    return static_cast<uint64_t>(
        std::floor(fraction * static_cast<double>(device.total_bytes)));
  }
  const uint64_t reserve =
      options.min_system_memory > 0
          ? options.min_system_memory
          : MinSystemMemory(device.free_bytes, device.compute_capability_major);
  if (device.free_bytes <= reserve) {
    return absl::ResourceExhaustedError(
        absl::StrCat("device has ", DescribeBytes(device.free_bytes),
                     " free, not more than ", "the ", DescribeBytes(reserve),
                     " left to the system"));
  }
  return device.free_bytes - reserve;
}

}  // namespace tensormem
