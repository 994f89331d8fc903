// CudaPluginOptions: how libtensormem_cuda_torch.so builds its allocators.
//
// Read from the environment (TENSORMEM_CUDA_SUB_ALLOCATOR,
// TENSORMEM_CUDA_MEMORY_LIMIT, TENSORMEM_GROWTH, TENSORMEM_GC,
// TENSORMEM_TRACE, TENSORMEM_REPORT), then overridden by the JSON object
// Python's `enable_cuda(**options)` passes. No torch header: the plug-in
// needs none, so it builds and is tested without PyTorch.
//
//   absl::StatusOr<CudaPluginOptions> options =
//       CudaPluginOptionsFromEnvironment(&std::getenv);
//   absl::Status status =
//       ApplyCudaPluginOptionsJson(R"({"sub_allocator": "cuda"})", &*options);
#ifndef TENSORMEM_TORCH_CUDA_PLUGIN_OPTIONS_H_
#define TENSORMEM_TORCH_CUDA_PLUGIN_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tensormem {

struct CudaPluginOptions {
  // Per device; 0 = the device's total memory.
  uint64_t memory_limit = 0;
  std::string sub_allocator = "cuda-vmm";  // cuda | cuda-vmm | cuda-async
  bool allow_growth = true;
  bool garbage_collection = true;
  std::string trace_path;   // every alloc/free with stream= and device=
  std::string report_path;  // stats JSON per device at exit
};

absl::StatusOr<CudaPluginOptions> CudaPluginOptionsFromEnvironment(
    const std::function<const char*(const char*)>& getenv);

// Keys: memory_limit (bytes or "2GiB"), sub_allocator, allow_growth,
// garbage_collection, trace_path, report_path. Unknown keys are errors.
absl::Status ApplyCudaPluginOptionsJson(std::string_view json_text,
                                        CudaPluginOptions* options);

bool operator==(const CudaPluginOptions& a, const CudaPluginOptions& b);

}  // namespace tensormem

#endif  // TENSORMEM_TORCH_CUDA_PLUGIN_OPTIONS_H_
