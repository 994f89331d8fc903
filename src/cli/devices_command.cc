// `tensormem devices`: the GPUs tensormem's CUDA sub-allocators would use, as
// the driver it loads (libcuda.so.1 or $TENSORMEM_CUDA_DRIVER) reports them.
#include <cstdio>
#include <iostream>

#include "absl/status/statusor.h"
#include "cli/commands.h"
#include "cli/failure.h"
#include "nlohmann/json.hpp"
#include "tensormem/core/units.h"
#include "tensormem/cuda/device_info.h"

namespace tensormem::cli {
namespace {

nlohmann::ordered_json ToJson(const CudaMachineInfo& machine) {
  nlohmann::ordered_json out = {{"driver_path", machine.driver_path},
                                {"driver_version", machine.driver_version},
                                {"devices", nlohmann::ordered_json::array()}};
  for (const CudaDeviceInfo& device : machine.devices) {
    out["devices"].push_back(
        {{"index", device.index},
         {"name", device.name},
         {"total_bytes", device.total_bytes},
         {"free_bytes", device.free_bytes},
         {"compute_capability",
          std::to_string(device.compute_capability_major) + "." +
              std::to_string(device.compute_capability_minor)},
         {"vmm_minimum_granularity", device.vmm_minimum_granularity},
         {"vmm_recommended_granularity", device.vmm_recommended_granularity}});
  }
  return out;
}

void PrintText(const CudaMachineInfo& machine) {
  std::printf("driver %d.%d (%s)\n", machine.driver_version / 1000,
              machine.driver_version % 1000 / 10, machine.driver_path.c_str());
  for (const CudaDeviceInfo& device : machine.devices) {
    std::printf(
        "device %d: %s, compute %d.%d, %s total, %s free, vmm granularity %s "
        "(recommended %s)\n",
        device.index, device.name.c_str(), device.compute_capability_major,
        device.compute_capability_minor, HumanBytes(device.total_bytes).c_str(),
        HumanBytes(device.free_bytes).c_str(),
        HumanBytes(device.vmm_minimum_granularity).c_str(),
        HumanBytes(device.vmm_recommended_granularity).c_str());
  }
}

}  // namespace

void AddDevicesCommand(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* command = app.add_subcommand(
      "devices",
      "List the GPUs the CUDA sub-allocators would use: driver version, name, "
      "memory, compute capability, VMM granularity.\n"
      "Example: tensormem devices --json");
  command->add_flag("--json", *json, "print one JSON object");
  command->callback([json] {
    absl::StatusOr<CudaMachineInfo> machine = DescribeCudaMachine();
    if (!machine.ok()) Fail("devices", machine.status());
    if (*json) {
      std::cout << ToJson(*machine).dump(2) << "\n";
    } else {
      PrintText(*machine);
    }
  });
}

}  // namespace tensormem::cli
