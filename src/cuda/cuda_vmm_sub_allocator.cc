#include "tensormem/cuda/cuda_vmm_sub_allocator.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "alloc/address_space.h"
#include "tensormem/core/checked_math.h"
#include "tensormem/core/status_macros.h"

namespace tensormem {
namespace {

CUmemAllocationProp DeviceMemoryProperties(int device) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

std::string OnDevice(std::string_view call, uint64_t bytes, int device) {
  return absl::StrCat(std::string(call), "(", DescribeBytes(bytes), ", device ",
                      device, ")");
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaVmmSubAllocator>>
CudaVmmSubAllocator::Create(const CudaSubAllocatorParams& params) {
  CudaDriver* driver = params.driver;
  if (driver == nullptr) {
    TM_ASSIGN_OR_RETURN(driver, CudaDriver::Get());
  }
  const CudaDeviceScope scope(*driver, params.device);
  TM_RETURN_IF_ERROR(scope.status());
  const CudaDriverApi& api = driver->api();
  const CUmemAllocationProp prop = DeviceMemoryProperties(params.device);
  size_t granularity = 0;
  TM_RETURN_IF_ERROR(driver->Check(
      api.cuMemGetAllocationGranularity(&granularity, &prop,
                                        CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
      absl::StrCat("cuMemGetAllocationGranularity(device ", params.device,
                   ")")));
  uint64_t reserve = params.reserve_bytes;
  if (reserve == 0) {
    TM_ASSIGN_OR_RETURN(const uint64_t total,
                        driver->TotalMemory(params.device));
    reserve = 2 * total;
  }
  const std::optional<uint64_t> rounded = CheckedRoundUp(reserve, granularity);
  if (!rounded) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuda-vmm: reservation of ", reserve, " bytes overflows"));
  }
  CUdeviceptr base = 0;
  TM_RETURN_IF_ERROR(
      driver->Check(api.cuMemAddressReserve(&base, *rounded, granularity, 0, 0),
                    OnDevice("cuMemAddressReserve", *rounded, params.device)));
  std::vector<int> access = params.access_devices;
  if (access.empty()) access.push_back(params.device);
  return std::unique_ptr<CudaVmmSubAllocator>(new CudaVmmSubAllocator(
      driver, params, std::move(access), base, *rounded, granularity));
}

CudaVmmSubAllocator::CudaVmmSubAllocator(CudaDriver* driver,
                                         const CudaSubAllocatorParams& params,
                                         std::vector<int> access_devices,
                                         CUdeviceptr base, uint64_t reserved,
                                         uint64_t granularity)
    : CudaSubAllocatorBase(driver, params),
      access_devices_(std::move(access_devices)),
      base_(base),
      reserved_(reserved),
      granularity_(granularity),
      free_ranges_(std::make_unique<internal::FreeRangeMap>(base, reserved)) {}

CudaVmmSubAllocator::~CudaVmmSubAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  const CudaDeviceScope scope(driver(), device());
  if (!Entered(scope)) return;
  for (const auto& [start, region] : regions_) Unback(start, region.size);
  const CUresult result = driver().api().cuMemAddressFree(base_, reserved_);
  if (result != CUDA_SUCCESS) {
    ReportFailedFree(result, OnDevice("cuMemAddressFree", reserved_, device()));
  }
}

bool CudaVmmSubAllocator::MapNew(uintptr_t start, uint64_t size) {
  const CudaDriverApi& api = driver().api();
  const CUmemAllocationProp prop = DeviceMemoryProperties(device());
  CUmemGenericAllocationHandle handle = 0;
  if (!Succeeded(api.cuMemCreate(&handle, size, &prop, 0),
                 [&] { return OnDevice("cuMemCreate", size, device()); })) {
    return false;
  }
  if (!Succeeded(api.cuMemMap(start, size, 0, handle, 0),
                 [&] { return OnDevice("cuMemMap", size, device()); })) {
    api.cuMemRelease(handle);
    return false;
  }
  mappings_[start] = Mapping{size, handle};
  mapped_bytes_ += size;
  return true;
}

bool CudaVmmSubAllocator::SetAccess(uintptr_t start, uint64_t size) {
  std::vector<CUmemAccessDesc> access(access_devices_.size());
  for (size_t i = 0; i < access.size(); ++i) {
    access[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[i].location.id = access_devices_[i];
    access[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  return Succeeded(
      driver().api().cuMemSetAccess(start, size, access.data(), access.size()),
      [&] { return OnDevice("cuMemSetAccess", size, device()); });
}

bool CudaVmmSubAllocator::Back(uintptr_t start, uint64_t size,
                               uint64_t handle_size) {
  for (uint64_t offset = 0; offset < size; offset += handle_size) {
    if (!MapNew(start + offset, handle_size)) {
      Unback(start, offset);
      return false;
    }
  }
  if (!SetAccess(start, size)) {
    Unback(start, size);
    return false;
  }
  return true;
}

bool CudaVmmSubAllocator::Unback(uintptr_t start, uint64_t size) {
  const CudaDriverApi& api = driver().api();
  bool all_unmapped = true;
  auto it = mappings_.lower_bound(start);
  while (it != mappings_.end() && it->first < start + size) {
    const auto [at, mapping] = *it;
    CUresult result = api.cuMemUnmap(at, mapping.size);
    if (result != CUDA_SUCCESS) {
      // Still mapped: it stays on the books, and its range must not be
      // handed out again as if it were free.
      ReportFailedFree(result, OnDevice("cuMemUnmap", mapping.size, device()));
      all_unmapped = false;
      ++it;
      continue;
    }
    result = api.cuMemRelease(mapping.handle);
    if (result != CUDA_SUCCESS) {  // unmapped, so the range is free again
      ReportFailedFree(result,
                       OnDevice("cuMemRelease", mapping.size, device()));
    }
    mapped_bytes_ -= mapping.size;
    it = mappings_.erase(it);
  }
  return all_unmapped;
}

void CudaVmmSubAllocator::RemapUnmappedGranules(uintptr_t start,
                                                uint64_t size) {
  for (uintptr_t at = start; at < start + size; at += granularity_) {
    if (mappings_.count(at) == 0 && MapNew(at, granularity_)) {
      SetAccess(at, granularity_);
    }
  }
}

void* CudaVmmSubAllocator::Alloc(size_t bytes, size_t alignment,
                                 size_t* bytes_received) {
  *bytes_received = 0;
  if (bytes == 0 || (alignment != 0 && !IsPowerOfTwo(alignment)) ||
      alignment > granularity_) {
    return nullptr;
  }
  const std::optional<uint64_t> size = CheckedRoundUp(bytes, granularity_);
  if (!size) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  // The top first: contiguous with the highest region, whatever lies below.
  std::optional<uintptr_t> start =
      free_ranges_->TakeFromTop(*size, granularity_);
  if (!start) start = free_ranges_->TakeFirstFit(*size, granularity_);
  if (!start) {
    Succeeded(CUDA_ERROR_OUT_OF_MEMORY, [&] {
      return absl::StrCat("cuda-vmm: ", DescribeBytes(*size),
                          " do not fit in the reserved ",
                          DescribeBytes(reserved_));
    });
    return nullptr;
  }
  const bool per_granule = *size / granularity_ <= kMaxGranuleHandles;
  const CudaDeviceScope scope(driver(), device());
  if (!Entered(scope) ||
      !Back(*start, *size, per_granule ? granularity_ : *size)) {
    free_ranges_->Release(*start, *size);
    return nullptr;
  }
  regions_[*start] = Region{*size, per_granule};
  *bytes_received = *size;
  void* region = reinterpret_cast<void*>(*start);
  VisitAlloc(region, device(), *size);
  return region;
}

void CudaVmmSubAllocator::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  auto found = regions_.find(start);
  if (found == regions_.end() || found->second.size != bytes) {
    ReportFailedFree(CUDA_ERROR_INVALID_VALUE,
                     absl::StrCat("free of ", DescribeBytes(bytes),
                                  " at a region it did not hand out"));
    return;
  }
  VisitFree(ptr, device(), bytes);
  // A region whose memory could not all be unmapped keeps its addresses.
  const CudaDeviceScope scope(driver(), device());
  if (Entered(scope) && WaitForQueuedWork("free", bytes) &&
      Unback(start, bytes)) {
    free_ranges_->Release(start, bytes);
  }
  regions_.erase(found);
}

bool CudaVmmSubAllocator::CanChange(uintptr_t start, uint64_t size,
                                    bool mapped) const {
  if (size == 0 || start % granularity_ != 0 || size % granularity_ != 0 ||
      start + size < start) {
    return false;
  }
  // The caller merges contiguous regions into one free stretch, so the range
  // may cross from one region into the next: each must follow on without a
  // gap and have a handle per granule.
  auto region = regions_.upper_bound(start);
  if (region == regions_.begin()) return false;
  --region;
  for (uintptr_t covered = region->first; covered < start + size; ++region) {
    if (region == regions_.end() || region->first != covered ||
        !region->second.handle_per_granule) {
      return false;
    }
    covered += region->second.size;
  }
  for (uintptr_t at = start; at < start + size; at += granularity_) {
    if (mappings_.contains(at) != mapped) return false;
  }
  return true;
}

bool CudaVmmSubAllocator::CheckChange(uintptr_t start, uint64_t size,
                                      bool mapped) {
  if (CanChange(start, size, mapped)) return true;
  ReportFailedFree(
      CUDA_ERROR_INVALID_VALUE,
      absl::StrCat(
          mapped ? "decommit" : "recommit", " of ", DescribeBytes(size),
          " at offset ", start - base_,
          ": not whole granules of adjacent regions with every granule ",
          mapped ? "mapped" : "decommitted"));
  return false;
}

bool CudaVmmSubAllocator::Decommit(void* ptr, size_t bytes) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!CheckChange(start, bytes, /*mapped=*/true)) return false;
  const CudaDeviceScope scope(driver(), device());
  if (!Entered(scope) || !WaitForQueuedWork("decommit", bytes)) return false;
  if (Unback(start, bytes)) return true;
  // Part of the range is still mapped: map the rest again, so the caller
  // keeps the whole range as it was before the call.
  RemapUnmappedGranules(start, bytes);
  return false;
}

bool CudaVmmSubAllocator::WaitForQueuedWork(const char* why, uint64_t bytes) {
  // A block freed by its last user may still be read or written by kernels
  // queued on any stream; unmapping it under them is a device fault, so the
  // device drains first (the cost is paid only when memory goes back).
  const CUresult result = driver().api().cuCtxSynchronize();
  if (result == CUDA_SUCCESS) return true;
  ReportFailedFree(result, absl::StrCat("cuCtxSynchronize before the ", why,
                                        " of ", DescribeBytes(bytes)));
  return false;
}

bool CudaVmmSubAllocator::Recommit(void* ptr, size_t bytes) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!CheckChange(start, bytes, /*mapped=*/false)) return false;
  const CudaDeviceScope scope(driver(), device());
  return Entered(scope) && Back(start, bytes, granularity_);
}

uint64_t CudaVmmSubAllocator::mapped_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return mapped_bytes_;
}

size_t CudaVmmSubAllocator::handle_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return mappings_.size();
}

size_t CudaVmmSubAllocator::region_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return regions_.size();
}

}  // namespace tensormem
