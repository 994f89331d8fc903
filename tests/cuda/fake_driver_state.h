// The fake CUDA driver's state, shared by its source files (not installed).
//
// Every entry point takes the one lock, logs itself, and may be told to fail
// (fault injection) before it does anything.
#ifndef TENSORMEM_TESTS_CUDA_FAKE_DRIVER_STATE_H_
#define TENSORMEM_TESTS_CUDA_FAKE_DRIVER_STATE_H_

#include <cuda.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace fake_cuda {

inline constexpr uint64_t kGranularity = uint64_t{2} << 20;

struct Device {
  uint64_t total = 0;
  uint64_t used = 0;
  int primary_retains = 0;
};

enum class BlockKind { kDevice, kPinnedHost, kPool };
struct Block {  // cuMemAlloc, cuMemHostAlloc and pool allocations
  uint64_t size = 0;
  uint64_t mapped = 0;  // bytes of the host mapping behind it
  int device = 0;
  BlockKind kind = BlockKind::kDevice;
  uint64_t pool = 0;
};
struct Handle {  // cuMemCreate
  uint64_t size = 0;
  int device = 0;
  int fd = -1;
  int mappings = 0;
};
struct Mapping {  // cuMemMap
  uint64_t size = 0;
  uint64_t handle = 0;
};
// fake_cuda_launch: a kernel queued on `stream` that uses [start, end);
// pending until its stream or the context is synchronised.
struct Work {
  uint64_t stream = 0;
  uintptr_t start = 0;
  uintptr_t end = 0;
  uint64_t seq = 0;  // launch order, from 1
};
struct Event {
  bool recorded = false;
  uint64_t stream = 0;
  uint64_t seq = 0;  // the last work queued on `stream` when recorded
};
struct Pool {
  int device = 0;
  uint64_t used = 0;
  uint64_t reserved = 0;  // counted against the device
  uint64_t release_threshold = 0;
};

struct State {
  std::mutex mutex;
  bool initialized = false;
  std::vector<Device> devices;
  // Primary-context retains by ordinal, kept across resets to fewer devices:
  // the process's loaded driver still holds them when a later reset adds the
  // device back.
  std::vector<int> kept_primary_retains;
  uint64_t host_limit = uint64_t{16} << 30;
  uint64_t host_used = 0;
  std::map<uintptr_t, Block> blocks;
  std::map<uintptr_t, uint64_t> reservations;  // start -> size
  std::map<uint64_t, Handle> handles;
  std::map<uintptr_t, Mapping> mappings;
  std::map<uint64_t, Pool> pools;
  std::map<uint64_t, bool> streams;  // id -> exists
  std::map<uint64_t, Event> events;
  std::vector<Work> pending;
  uint64_t next_work_seq = 1;
  // (stream, other stream) -> the last of the other's work `stream` waits for.
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> waits;
  std::string violations;  // work that raced, or memory unmapped under work
  uint64_t next_id = 1;
  std::map<std::string, int> call_counts;
  std::map<std::string, std::map<int, CUresult>> injected;  // name -> nth
  std::string log;
  std::string text;  // returned to callers
};

State& GetState();
// The current thread's device, or -1 without a current context.
int& CurrentDevice();

// Counts and logs a call; returns the injected error, or CUDA_SUCCESS to go
// on. `name` is the symbol name (a _v2 suffix is dropped).
CUresult Enter(State& state, const char* name, const std::string& arguments);
// Appends "-> <result>" to the call's log line and returns `result`.
CUresult Leave(State& state, CUresult result);
// CUDA_ERROR_NOT_INITIALIZED / CUDA_ERROR_INVALID_CONTEXT when the call
// cannot run yet.
CUresult RequireContext(State& state);
bool ValidDevice(const State& state, int device);
// Takes `bytes` of `device`'s memory; false when it does not have them.
bool ChargeDevice(State& state, int device, uint64_t bytes);
void* MapHost(uint64_t bytes);
void UnmapHost(void* ptr, uint64_t bytes);
const char* ErrorName(CUresult result);
// Releases pool reserves above their threshold (at synchronisation).
void TrimPoolsAtSync(State& state);
// Pending work: completed by a synchronisation (`stream` 0 with `all`: every
// stream), checked before memory is unmapped ("what" names the call).
void CompleteWork(State& state, uint64_t stream, bool all);
void CheckNoWorkOn(State& state, uintptr_t start, uint64_t size,
                   const char* what);
// Records a violation unless `stream` is ordered (by an event wait) after
// every other stream's pending work on the range.
void CheckOrderedAfterWork(State& state, uint64_t stream, uintptr_t start,
                           uint64_t size, const char* what);
void ReleaseEverything(State& state);

}  // namespace fake_cuda

// Every entry point starts with this: lock, log, maybe fail.
#define FAKE_CUDA_ENTER(arguments)                                        \
  ::fake_cuda::State& state = ::fake_cuda::GetState();                    \
  std::lock_guard<std::mutex> lock(state.mutex);                          \
  if (CUresult injected = ::fake_cuda::Enter(state, __func__, arguments); \
      injected != CUDA_SUCCESS)                                           \
    return ::fake_cuda::Leave(state, injected);

#define FAKE_CUDA_RETURN(result) return ::fake_cuda::Leave(state, (result))

#endif  // TENSORMEM_TESTS_CUDA_FAKE_DRIVER_STATE_H_
