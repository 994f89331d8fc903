// What tensormem sees of the machine's GPUs through the driver it loaded:
// the driver's version and, per device, its name, memory, compute capability
// and the virtual-memory granularity that cuda-vmm maps in. `tensormem
// devices` prints it; the GPU bundle's check records it first.
//
//   absl::StatusOr<CudaMachineInfo> info = DescribeCudaMachine();
//   if (info.ok()) std::cout << info->devices[0].name;
#ifndef TENSORMEM_CUDA_DEVICE_INFO_H_
#define TENSORMEM_CUDA_DEVICE_INFO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tensormem {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  // cuMemGetAllocationGranularity for pinned device memory.
  uint64_t vmm_minimum_granularity = 0;
  uint64_t vmm_recommended_granularity = 0;
};

struct CudaMachineInfo {
  std::string driver_path;  // the library that was loaded
  int driver_version = 0;   // cuDriverGetVersion: 13000 for CUDA 13.0
  std::vector<CudaDeviceInfo> devices;
};

// Loads the driver (CudaDriver::Get) and asks it about every device; any
// failing call is an error naming the call and the device.
absl::StatusOr<CudaMachineInfo> DescribeCudaMachine();

}  // namespace tensormem

#endif  // TENSORMEM_CUDA_DEVICE_INFO_H_
