#include "tensormem/cuda/cuda_async_sub_allocator.h"

#include "absl/strings/str_cat.h"
#include "tensormem/core/checked_math.h"
#include "tensormem/core/status_macros.h"

namespace tensormem {

absl::StatusOr<std::unique_ptr<CudaAsyncSubAllocator>>
CudaAsyncSubAllocator::Create(const CudaSubAllocatorParams& params) {
  CudaDriver* driver = params.driver;
  if (driver == nullptr) {
    TM_ASSIGN_OR_RETURN(driver, CudaDriver::Get());
  }
  const CudaDeviceScope scope(*driver, params.device);
  TM_RETURN_IF_ERROR(scope.status());
  CUmemPoolProps props = {};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = params.device;
  CUmemoryPool pool = nullptr;
  TM_RETURN_IF_ERROR(driver->Check(
      driver->api().cuMemPoolCreate(&pool, &props),
      absl::StrCat("cuMemPoolCreate(device ", params.device, ")")));
  cuuint64_t threshold = params.release_threshold;
  absl::Status status =
      driver->Check(driver->api().cuMemPoolSetAttribute(
                        pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
                    absl::StrCat("cuMemPoolSetAttribute(release threshold ",
                                 DescribeBytes(threshold), ")"));
  if (!status.ok()) {
    driver->api().cuMemPoolDestroy(pool);
    return status;
  }
  return std::unique_ptr<CudaAsyncSubAllocator>(
      new CudaAsyncSubAllocator(driver, params, pool));
}

CudaAsyncSubAllocator::~CudaAsyncSubAllocator() {
  const CudaDeviceScope scope(driver(), device());
  if (!Entered(scope)) return;
  const CUresult result = driver().api().cuMemPoolDestroy(pool_);
  if (result != CUDA_SUCCESS) ReportFailedFree(result, "cuMemPoolDestroy");
}

void* CudaAsyncSubAllocator::Alloc(size_t bytes, size_t alignment,
                                   size_t* bytes_received) {
  *bytes_received = 0;
  if (bytes == 0 || (alignment != 0 && !IsPowerOfTwo(alignment)) ||
      alignment > kAlignment) {
    return nullptr;
  }
  const CudaDeviceScope scope(driver(), device());
  if (!Entered(scope)) return nullptr;
  CUdeviceptr ptr = 0;
  if (!Succeeded(
          driver().api().cuMemAllocFromPoolAsync(&ptr, bytes, pool_, stream_),
          [&] {
            return absl::StrCat("cuMemAllocFromPoolAsync(",
                                DescribeBytes(bytes), ", device ", device(),
                                ")");
          })) {
    return nullptr;
  }
  // The region is used on whatever streams its blocks go to, which the pool's
  // stream does not order with (PyTorch's streams do not wait for the legacy
  // one): it is handed out once its allocation has completed.
  if (!Succeeded(driver().api().cuStreamSynchronize(stream_), [] {
        return std::string("cuStreamSynchronize(pool stream)");
      })) {
    driver().api().cuMemFreeAsync(ptr, stream_);
    return nullptr;
  }
  void* region = reinterpret_cast<void*>(ptr);
  *bytes_received = bytes;
  VisitAlloc(region, device(), bytes);
  return region;
}

void CudaAsyncSubAllocator::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  VisitFree(ptr, device(), bytes);
  const CudaDeviceScope scope(driver(), device());
  if (!Entered(scope)) return;
  // Kernels on any stream may still use the region: the device drains before
  // the pool may hand it out again.
  CUresult result = driver().api().cuCtxSynchronize();
  if (result == CUDA_SUCCESS) {
    result = driver().api().cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(ptr),
                                           stream_);
  }
  if (result != CUDA_SUCCESS) {
    ReportFailedFree(result,
                     absl::StrCat("cuMemFreeAsync(", DescribeBytes(bytes),
                                  ", device ", device(), ")"));
  }
}

absl::Status CudaAsyncSubAllocator::Trim() {
  const CudaDeviceScope scope(driver(), device());
  TM_RETURN_IF_ERROR(scope.status());
  return driver().Check(driver().api().cuMemPoolTrimTo(pool_, 0),
                        "cuMemPoolTrimTo(0)");
}

absl::StatusOr<uint64_t> CudaAsyncSubAllocator::PoolAttribute(
    CUmemPool_attribute attribute, const char* what) {
  const CudaDeviceScope scope(driver(), device());
  TM_RETURN_IF_ERROR(scope.status());
  cuuint64_t value = 0;
  TM_RETURN_IF_ERROR(driver().Check(
      driver().api().cuMemPoolGetAttribute(pool_, attribute, &value),
      absl::StrCat("cuMemPoolGetAttribute(", what, ")")));
  return value;
}

absl::StatusOr<uint64_t> CudaAsyncSubAllocator::ReservedBytes() {
  return PoolAttribute(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, "reserved");
}

absl::StatusOr<uint64_t> CudaAsyncSubAllocator::UsedBytes() {
  return PoolAttribute(CU_MEMPOOL_ATTR_USED_MEM_CURRENT, "used");
}

}  // namespace tensormem
