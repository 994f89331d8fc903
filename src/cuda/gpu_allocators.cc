// CreateGpuAllocators: the per-device BFC allocators and the pinned host one.
#include "absl/strings/str_cat.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/cuda/cuda_sub_allocators.h"
#include "tensormem/cuda/gpu_bfc_options.h"

namespace tensormem {
namespace {

absl::StatusOr<GpuDeviceFacts> FactsOf(CudaDriver& driver, int device) {
  GpuDeviceFacts facts;
  TM_ASSIGN_OR_RETURN(facts.total_bytes, driver.TotalMemory(device));
  TM_ASSIGN_OR_RETURN(facts.free_bytes, driver.FreeMemory(device));
  TM_ASSIGN_OR_RETURN(facts.compute_capability_major,
                      driver.ComputeCapabilityMajor(device));
  return facts;
}

absl::StatusOr<std::unique_ptr<BfcAllocator>> DeviceAllocator(
    const GpuBfcOptions& options, CudaDriver* driver, int device) {
  TM_ASSIGN_OR_RETURN(const GpuDeviceFacts facts, FactsOf(*driver, device));
  TM_ASSIGN_OR_RETURN(const uint64_t limit, DeviceMemoryLimit(options, facts));
  CudaSubAllocatorParams params;
  params.driver = driver;
  params.device = device;
  // A pool that keeps all it got, as TensorFlow configures its async pool.
  params.release_threshold = limit;
  TM_ASSIGN_OR_RETURN(std::unique_ptr<SubAllocator> upstream,
                      CreateCudaSubAllocator(options.sub_allocator, params));
  BfcAllocator::Options bfc;
  bfc.allow_growth = options.allow_growth;
  bfc.garbage_collection = options.garbage_collection;
  bfc.name = absl::StrCat("GPU_", device, "_bfc");
  return std::make_unique<BfcAllocator>(std::move(upstream), limit, bfc);
}

}  // namespace

absl::StatusOr<GpuAllocators> CreateGpuAllocators(const GpuBfcOptions& options,
                                                  CudaDriver* driver) {
  if (driver == nullptr) {
    TM_ASSIGN_OR_RETURN(driver, CudaDriver::Get());
  }
  GpuAllocators allocators;
  allocators.devices = options.devices;
  if (allocators.devices.empty()) {
    TM_ASSIGN_OR_RETURN(const int count, driver->DeviceCount());
    for (int device = 0; device < count; ++device) {
      allocators.devices.push_back(device);
    }
  }
  for (const int device : allocators.devices) {
    TM_ASSIGN_OR_RETURN(std::unique_ptr<BfcAllocator> allocator,
                        DeviceAllocator(options, driver, device));
    allocators.device_allocators.push_back(std::move(allocator));
  }
  CudaSubAllocatorParams host;
  host.driver = driver;
  host.device = allocators.devices.empty() ? 0 : allocators.devices.front();
  TM_ASSIGN_OR_RETURN(std::unique_ptr<SubAllocator> pinned,
                      CreateCudaSubAllocator("cuda-host", host));
  BfcAllocator::Options bfc;
  bfc.allow_growth = true;
  bfc.garbage_collection = options.garbage_collection;
  bfc.name = "gpu_host_bfc";
  allocators.pinned_host = std::make_unique<BfcAllocator>(
      std::move(pinned), options.host_memory_limit, bfc);
  return allocators;
}

}  // namespace tensormem
