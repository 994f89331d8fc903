// CreateCudaSubAllocator: the CUDA kinds by name.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/cuda/cuda_async_sub_allocator.h"
#include "tensormem/cuda/cuda_sub_allocators.h"
#include "tensormem/cuda/cuda_vmm_sub_allocator.h"

namespace tensormem {

std::vector<std::string_view> CudaSubAllocatorKinds() {
  return {"cuda", "cuda-host", "cuda-vmm", "cuda-async"};
}

absl::StatusOr<std::unique_ptr<SubAllocator>> CreateCudaSubAllocator(
    std::string_view kind, const CudaSubAllocatorParams& params) {
  if (kind == "cuda-vmm") return CudaVmmSubAllocator::Create(params);
  if (kind == "cuda-async") return CudaAsyncSubAllocator::Create(params);
  if (kind != "cuda" && kind != "cuda-host") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown CUDA sub-allocator kind '", std::string(kind), "' (known: ",
        absl::StrJoin(CudaSubAllocatorKinds(), ", ", absl::StreamFormatter()),
        ")"));
  }
  CudaDriver* driver = params.driver;
  if (driver == nullptr) {
    TM_ASSIGN_OR_RETURN(driver, CudaDriver::Get());
  }
  TM_RETURN_IF_ERROR(driver->MakeCurrent(params.device));  // checks the device
  if (kind == "cuda") {
    return std::make_unique<CudaMallocSubAllocator>(driver, params);
  }
  return std::make_unique<CudaHostSubAllocator>(driver, params);
}

}  // namespace tensormem
