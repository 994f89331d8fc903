#include "tensormem/cuda/device_info.h"

#include "absl/strings/str_cat.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/cuda/driver.h"

namespace tensormem {
namespace {

absl::StatusOr<uint64_t> Granularity(const CudaDriver& driver, int device,
                                     CUmemAllocationGranularity_flags which) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  size_t granularity = 0;
  TM_RETURN_IF_ERROR(driver.Check(
      driver.api().cuMemGetAllocationGranularity(&granularity, &prop, which),
      absl::StrCat("cuMemGetAllocationGranularity(device ", device, ")")));
  return granularity;
}

absl::StatusOr<CudaDeviceInfo> DescribeDevice(CudaDriver& driver, int index) {
  const CudaDriverApi& api = driver.api();
  CudaDeviceInfo info;
  info.index = index;
  CUdevice device = 0;
  const std::string where = absl::StrCat("(device ", index, ")");
  TM_RETURN_IF_ERROR(
      driver.Check(api.cuDeviceGet(&device, index), "cuDeviceGet" + where));
  char name[256] = {};
  TM_RETURN_IF_ERROR(
      driver.Check(api.cuDeviceGetName(name, sizeof name, device),
                   "cuDeviceGetName" + where));
  info.name = name;
  TM_ASSIGN_OR_RETURN(info.total_bytes, driver.TotalMemory(index));
  TM_ASSIGN_OR_RETURN(info.free_bytes, driver.FreeMemory(index));
  TM_ASSIGN_OR_RETURN(info.compute_capability_major,
                      driver.ComputeCapabilityMajor(index));
  // The minor version is informative only: a driver that does not report it
  // (the fake) leaves it 0.
  if (api.cuDeviceGetAttribute(&info.compute_capability_minor,
                               CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                               device) != CUDA_SUCCESS) {
    info.compute_capability_minor = 0;
  }
  TM_ASSIGN_OR_RETURN(
      info.vmm_minimum_granularity,
      Granularity(driver, index, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  TM_ASSIGN_OR_RETURN(
      info.vmm_recommended_granularity,
      Granularity(driver, index, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  return info;
}

}  // namespace

absl::StatusOr<CudaMachineInfo> DescribeCudaMachine() {
  TM_ASSIGN_OR_RETURN(CudaDriver * driver, CudaDriver::Get());
  CudaMachineInfo machine;
  machine.driver_path = driver->path();
  TM_RETURN_IF_ERROR(
      driver->Check(driver->api().cuDriverGetVersion(&machine.driver_version),
                    "cuDriverGetVersion"));
  TM_ASSIGN_OR_RETURN(const int count, driver->DeviceCount());
  for (int index = 0; index < count; ++index) {
    TM_ASSIGN_OR_RETURN(CudaDeviceInfo info, DescribeDevice(*driver, index));
    machine.devices.push_back(std::move(info));
  }
  return machine;
}

}  // namespace tensormem
