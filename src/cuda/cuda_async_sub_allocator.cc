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
  TM_RETURN_IF_ERROR(driver->MakeCurrent(params.device));
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
  if (!MakeCurrent()) return;
  const CUresult result = driver().api().cuMemPoolDestroy(pool_);
  if (result != CUDA_SUCCESS) ReportFailedFree(result, "cuMemPoolDestroy");
}

void* CudaAsyncSubAllocator::Alloc(size_t bytes, size_t alignment,
                                   size_t* bytes_received) {
  *bytes_received = 0;
  if (bytes == 0 || (alignment != 0 && !IsPowerOfTwo(alignment)) ||
      alignment > kAlignment || !MakeCurrent()) {
    return nullptr;
  }
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
  void* region = reinterpret_cast<void*>(ptr);
  *bytes_received = bytes;
  VisitAlloc(region, device(), bytes);
  return region;
}

void CudaAsyncSubAllocator::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  VisitFree(ptr, device(), bytes);
  if (!MakeCurrent()) return;
  const CUresult result = driver().api().cuMemFreeAsync(
      reinterpret_cast<CUdeviceptr>(ptr), stream_);
  if (result != CUDA_SUCCESS) {
    ReportFailedFree(result,
                     absl::StrCat("cuMemFreeAsync(", DescribeBytes(bytes),
                                  ", device ", device(), ")"));
  }
}

absl::Status CudaAsyncSubAllocator::Trim() {
  TM_RETURN_IF_ERROR(driver().MakeCurrent(device()));
  return driver().Check(driver().api().cuMemPoolTrimTo(pool_, 0),
                        "cuMemPoolTrimTo(0)");
}

absl::StatusOr<uint64_t> CudaAsyncSubAllocator::PoolAttribute(
    CUmemPool_attribute attribute, const char* what) {
  TM_RETURN_IF_ERROR(driver().MakeCurrent(device()));
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
