// The fake CUDA driver: state, control API, devices, contexts, streams and
// events. Streams run no work of their own, so an event is complete unless a
// test queued work before it (fake_driver_work.cc); what the fake checks is
// that handles are valid and used in the right order.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda/fake_cuda_control.h"
#include "cuda/fake_driver_state.h"

namespace fake_cuda {
namespace {

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  return std::strtoull(text, nullptr, 10);
}

void Configure(State& state, int device_count, uint64_t memory) {
  state.devices.assign(device_count, Device{memory, 0, 0});
}

std::string Normalised(const char* name) {
  std::string text(name);
  if (text.size() > 3 && text.compare(text.size() - 3, 3, "_v2") == 0) {
    text.resize(text.size() - 3);
  }
  return text;
}

}  // namespace

State& GetState() {
  static State* const state = [] {
    auto* created = new State;
    Configure(*created, static_cast<int>(EnvOr("FAKE_CUDA_DEVICES", 2)),
              EnvOr("FAKE_CUDA_MEMORY", uint64_t{4} << 30));
    return created;
  }();
  return *state;
}

int& CurrentDevice() {
  thread_local int device = -1;
  return device;
}

CUresult Enter(State& state, const char* name, const std::string& arguments) {
  const std::string entry = Normalised(name);
  const int nth = ++state.call_counts[entry];
  state.log += entry;
  if (!arguments.empty()) state.log += " " + arguments;
  auto planned = state.injected.find(entry);
  if (planned == state.injected.end()) return CUDA_SUCCESS;
  auto failure = planned->second.find(nth);
  if (failure == planned->second.end()) return CUDA_SUCCESS;
  state.log += " (injected)";
  return failure->second;
}

CUresult Leave(State& state, CUresult result) {
  state.log += std::string(" -> ") + ErrorName(result) + "\n";
  return result;
}

CUresult RequireContext(State& state) {
  if (!state.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  const int device = CurrentDevice();
  if (!ValidDevice(state, device) ||
      state.devices[device].primary_retains == 0) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  return CUDA_SUCCESS;
}

bool ValidDevice(const State& state, int device) {
  return device >= 0 && device < static_cast<int>(state.devices.size());
}

bool ChargeDevice(State& state, int device, uint64_t bytes) {
  Device& target = state.devices[device];
  if (bytes > target.total - target.used) return false;
  target.used += bytes;
  return true;
}

void* MapHost(uint64_t bytes) {
  void* ptr = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return ptr == MAP_FAILED ? nullptr : ptr;
}

void UnmapHost(void* ptr, uint64_t bytes) { munmap(ptr, bytes); }

const char* ErrorName(CUresult result) {
  switch (result) {
    case CUDA_SUCCESS:
      return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE:
      return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY:
      return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED:
      return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_INVALID_DEVICE:
      return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_CONTEXT:
      return "CUDA_ERROR_INVALID_CONTEXT";
    case CUDA_ERROR_INVALID_HANDLE:
      return "CUDA_ERROR_INVALID_HANDLE";
    case CUDA_ERROR_NOT_READY:
      return "CUDA_ERROR_NOT_READY";
    case CUDA_ERROR_NOT_SUPPORTED:
      return "CUDA_ERROR_NOT_SUPPORTED";
    case CUDA_ERROR_UNKNOWN:
      return "CUDA_ERROR_UNKNOWN";
    default:
      return nullptr;
  }
}

void ReleaseEverything(State& state) {
  for (auto& [start, block] : state.blocks) {
    UnmapHost(reinterpret_cast<void*>(start), block.mapped);
  }
  for (auto& [start, size] : state.reservations) {
    UnmapHost(reinterpret_cast<void*>(start), size);
  }
  for (auto& [id, handle] : state.handles) close(handle.fd);
  state.blocks.clear();
  state.reservations.clear();
  state.handles.clear();
  state.mappings.clear();
  state.pools.clear();
  state.streams.clear();
  state.events.clear();
  state.pending.clear();
  state.waits.clear();
  state.host_used = 0;
}

}  // namespace fake_cuda

using fake_cuda::GetState;
using fake_cuda::State;

extern "C" {

void fake_cuda_reset(int device_count, uint64_t memory_per_device) {
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  fake_cuda::ReleaseEverything(state);
  std::vector<int>& retains = state.kept_primary_retains;
  if (retains.size() < state.devices.size())
    retains.resize(state.devices.size());
  for (size_t i = 0; i < state.devices.size(); ++i) {
    retains[i] = state.devices[i].primary_retains;
  }
  fake_cuda::Configure(state, device_count, memory_per_device);
  // Primary contexts a loaded driver retained stay retained, also those of a
  // device an earlier reset removed.
  for (size_t i = 0; i < retains.size() && i < state.devices.size(); ++i) {
    state.devices[i].primary_retains = retains[i];
  }
  state.call_counts.clear();
  state.injected.clear();
  state.log.clear();
  state.violations.clear();
  state.host_limit = uint64_t{16} << 30;
}

void fake_cuda_set_host_limit(uint64_t bytes) {
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.host_limit = bytes;
}

void fake_cuda_fail_call(const char* entry_point, int nth, CUresult error) {
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.injected[entry_point][state.call_counts[entry_point] + nth] = error;
}

const char* fake_cuda_call_log(void) {
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.text = state.log;
  return state.text.c_str();
}

void fake_cuda_clear_call_log(void) {
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.log.clear();
}

int fake_cuda_call_count(const char* entry_point) {
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  auto found = state.call_counts.find(entry_point);
  return found == state.call_counts.end() ? 0 : found->second;
}

uint64_t fake_cuda_device_used(int device) {
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  return fake_cuda::ValidDevice(state, device) ? state.devices[device].used : 0;
}

int fake_cuda_live_objects(void) {
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  return static_cast<int>(state.blocks.size() + state.reservations.size() +
                          state.handles.size() + state.mappings.size() +
                          state.pools.size() + state.streams.size() +
                          state.events.size());
}

const char* fake_cuda_leak_report(void) {
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.text.clear();
  for (const auto& [start, block] : state.blocks) {
    state.text += "block at " + std::to_string(start) + " of " +
                  std::to_string(block.size) + " bytes\n";
  }
  for (const auto& [start, size] : state.reservations) {
    state.text += "reservation of " + std::to_string(size) + " bytes\n";
  }
  for (const auto& [id, handle] : state.handles) {
    state.text += "handle " + std::to_string(id) + " of " +
                  std::to_string(handle.size) + " bytes\n";
  }
  for (const auto& [start, mapping] : state.mappings) {
    state.text += "mapping of handle " + std::to_string(mapping.handle) + "\n";
  }
  state.text += std::to_string(state.pools.size()) + " pools, " +
                std::to_string(state.streams.size()) + " streams, " +
                std::to_string(state.events.size()) + " events\n";
  return state.text.c_str();
}

CUresult CUDAAPI cuInit(unsigned int flags) {
  FAKE_CUDA_ENTER("");
  if (flags != 0) FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  state.initialized = true;
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** name) {
  // Not logged: it is how callers describe other calls.
  *name = fake_cuda::ErrorName(error);
  return *name == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int* version) {
  FAKE_CUDA_ENTER("");
  *version = CUDA_VERSION;
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  FAKE_CUDA_ENTER("");
  if (!state.initialized) FAKE_CUDA_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  *count = static_cast<int>(state.devices.size());
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  FAKE_CUDA_ENTER("ordinal=" + std::to_string(ordinal));
  if (!state.initialized) FAKE_CUDA_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!fake_cuda::ValidDevice(state, ordinal)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_DEVICE);
  }
  *device = ordinal;
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceGetName(char* name, int length, CUdevice device) {
  FAKE_CUDA_ENTER("device=" + std::to_string(device));
  if (!fake_cuda::ValidDevice(state, device)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_DEVICE);
  }
  if (name == nullptr || length <= 0)
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  std::snprintf(name, static_cast<size_t>(length), "tensormem fake device %d",
                device);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice device) {
  FAKE_CUDA_ENTER("device=" + std::to_string(device));
  if (!fake_cuda::ValidDevice(state, device)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_DEVICE);
  }
  *bytes = state.devices[device].total;
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute,
                                      CUdevice device) {
  FAKE_CUDA_ENTER("attribute=" + std::to_string(attribute));
  if (!fake_cuda::ValidDevice(state, device)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_DEVICE);
  }
  if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) {
    *value = 8;
  } else if (attribute == CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED ||
             attribute ==
                 CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) {
    *value = 1;
  } else {
    FAKE_CUDA_RETURN(CUDA_ERROR_NOT_SUPPORTED);
  }
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

// Contexts are the device ordinal + 1 in disguise; never dereferenced.
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  FAKE_CUDA_ENTER("device=" + std::to_string(device));
  if (!fake_cuda::ValidDevice(state, device)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_DEVICE);
  }
  ++state.devices[device].primary_retains;
  *context = reinterpret_cast<CUcontext>(static_cast<uintptr_t>(device + 1));
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice device) {
  FAKE_CUDA_ENTER("device=" + std::to_string(device));
  if (!fake_cuda::ValidDevice(state, device) ||
      state.devices[device].primary_retains == 0) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_CONTEXT);
  }
  --state.devices[device].primary_retains;
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
  // Not logged: tensormem sets the context before every call.
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  const int device = static_cast<int>(reinterpret_cast<uintptr_t>(context)) - 1;
  if (context != nullptr && (!fake_cuda::ValidDevice(state, device) ||
                             state.devices[device].primary_retains == 0)) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  fake_cuda::CurrentDevice() = device;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext* context) {
  const int device = fake_cuda::CurrentDevice();
  *context =
      device < 0
          ? nullptr
          : reinterpret_cast<CUcontext>(static_cast<uintptr_t>(device + 1));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void) {
  FAKE_CUDA_ENTER("");
  if (CUresult error = fake_cuda::RequireContext(state))
    FAKE_CUDA_RETURN(error);
  fake_cuda::CompleteWork(state, 0, /*all=*/true);
  fake_cuda::TrimPoolsAtSync(state);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  FAKE_CUDA_ENTER("");
  if (CUresult error = fake_cuda::RequireContext(state))
    FAKE_CUDA_RETURN(error);
  const fake_cuda::Device& device = state.devices[fake_cuda::CurrentDevice()];
  *free_bytes = device.total - device.used;
  *total_bytes = device.total;
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

}  // extern "C"
