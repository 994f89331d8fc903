// CreateCudaSubAllocator: the CUDA kinds by name.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tensormem/alloc/sub_allocator_registry.h"
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
  const CudaDeviceScope scope(*driver, params.device);
  TM_RETURN_IF_ERROR(scope.status());  // checks the device
  if (kind == "cuda") {
    return std::make_unique<CudaMallocSubAllocator>(driver, params);
  }
  return std::make_unique<CudaHostSubAllocator>(driver, params);
}

namespace {

template <const char* kKind>
absl::StatusOr<std::unique_ptr<SubAllocator>> FromRegistry(
    const SubAllocatorParams& params) {
  if (params.coalescing && std::string_view(kKind) != "cuda-vmm") {
    return absl::InvalidArgumentError(
        absl::StrCat("sub-allocator '", kKind,
                     "' cannot coalesce: its regions are never contiguous"));
  }
  CudaSubAllocatorParams cuda;
  cuda.device = params.device;
  cuda.reserve_bytes = params.capacity;
  return CreateCudaSubAllocator(kKind, cuda);
}

constexpr char kCuda[] = "cuda";
constexpr char kCudaHost[] = "cuda-host";
constexpr char kCudaVmm[] = "cuda-vmm";
constexpr char kCudaAsync[] = "cuda-async";

}  // namespace

void RegisterCudaSubAllocators() {
  // One line per kind.
  RegisterSubAllocatorKind({kCuda, "CUDA device memory, cuMemAlloc per region",
                            RegionContiguity::kNever},
                           FromRegistry<kCuda>);
  RegisterSubAllocatorKind(
      {kCudaHost, "CUDA pinned host memory", RegionContiguity::kNever},
      FromRegistry<kCudaHost>);
  RegisterSubAllocatorKind(
      {kCudaVmm,
       "CUDA virtual memory: reserved once, mapped on demand, "
       "grows contiguously and shrinks",
       RegionContiguity::kAlways},
      FromRegistry<kCudaVmm>);
  RegisterSubAllocatorKind(
      {kCudaAsync, "CUDA stream-ordered memory pool (cuMemAllocAsync)",
       RegionContiguity::kNever},
      FromRegistry<kCudaAsync>);
}

}  // namespace tensormem
