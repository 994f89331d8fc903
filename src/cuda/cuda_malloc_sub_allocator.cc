// "cuda" and "cuda-host": one driver allocation per region.
#include "tensormem/core/checked_math.h"
#include "tensormem/cuda/cuda_sub_allocators.h"

namespace tensormem {
namespace {

std::string Describe(std::string_view call, size_t bytes, int device) {
  return std::string(call) + "(" + DescribeBytes(bytes) + ", device " +
         std::to_string(device) + ")";
}

bool AlignmentServed(size_t alignment, size_t guaranteed) {
  return alignment == 0 || (IsPowerOfTwo(alignment) && alignment <= guaranteed);
}

}  // namespace

void* CudaMallocSubAllocator::Alloc(size_t bytes, size_t alignment,
                                    size_t* bytes_received) {
  *bytes_received = 0;
  if (bytes == 0 || !AlignmentServed(alignment, kAlignment)) return nullptr;
  const CudaDeviceScope scope(driver(), device());
  if (!Entered(scope)) return nullptr;
  CUdeviceptr ptr = 0;
  if (!Succeeded(driver().api().cuMemAlloc(&ptr, bytes),
                 [&] { return Describe("cuMemAlloc", bytes, device()); })) {
    return nullptr;
  }
  void* region = reinterpret_cast<void*>(ptr);
  *bytes_received = bytes;
  VisitAlloc(region, device(), bytes);
  return region;
}

void CudaMallocSubAllocator::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  VisitFree(ptr, device(), bytes);
  const CudaDeviceScope scope(driver(), device());
  if (!Entered(scope)) return;
  const CUresult result =
      driver().api().cuMemFree(reinterpret_cast<CUdeviceptr>(ptr));
  if (result != CUDA_SUCCESS) {
    ReportFailedFree(result, Describe("cuMemFree", bytes, device()));
  }
}

void* CudaHostSubAllocator::Alloc(size_t bytes, size_t alignment,
                                  size_t* bytes_received) {
  *bytes_received = 0;
  if (bytes == 0 || !AlignmentServed(alignment, kAlignment)) return nullptr;
  const CudaDeviceScope scope(driver(), device());
  if (!Entered(scope)) return nullptr;
  void* region = nullptr;
  // Portable: usable from every context, as a process-wide pool must be.
  if (!Succeeded(driver().api().cuMemHostAlloc(&region, bytes,
                                               CU_MEMHOSTALLOC_PORTABLE),
                 [&] { return Describe("cuMemHostAlloc", bytes, device()); })) {
    return nullptr;
  }
  *bytes_received = bytes;
  VisitAlloc(region, device(), bytes);
  return region;
}

void CudaHostSubAllocator::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  VisitFree(ptr, device(), bytes);
  const CudaDeviceScope scope(driver(), device());
  if (!Entered(scope)) return;
  const CUresult result = driver().api().cuMemFreeHost(ptr);
  if (result != CUDA_SUCCESS) {
    ReportFailedFree(result, Describe("cuMemFreeHost", bytes, device()));
  }
}

}  // namespace tensormem
