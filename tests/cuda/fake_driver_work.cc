// The fake CUDA driver: work queued on streams. The fake runs no kernels, but
// a test can queue one (fake_cuda_launch) that uses a range of memory; it
// stays pending until its stream or the context is synchronised. The fake
// then catches what would corrupt memory on a real GPU:
//   - a range unmapped while pending work still uses it;
//   - work on one stream using a range another stream's pending work uses,
//     with no event wait ordering the two; likewise a stream-ordered free.
// Each is recorded in fake_cuda_violations(), which CudaTest checks is empty
// at the end of every test.
#include <algorithm>
#include <string>

#include "cuda/fake_cuda_control.h"
#include "cuda/fake_driver_state.h"

namespace fake_cuda {
namespace {

uint64_t Id(const void* handle) { return reinterpret_cast<uintptr_t>(handle); }

std::string Range(uintptr_t start, uint64_t size) {
  std::string text(1, '[');  // appended piece by piece: gcc 12's -Wrestrict
  text += std::to_string(start);  // misfires on "[" + std::to_string(...)
  text += ", +";
  text += std::to_string(size);
  return text + ")";
}

}  // namespace

void CompleteWork(State& state, uint64_t stream, bool all) {
  std::erase_if(state.pending,
                [&](const Work& work) { return all || work.stream == stream; });
}

void CheckNoWorkOn(State& state, uintptr_t start, uint64_t size,
                   const char* what) {
  for (const Work& work : state.pending) {
    if (work.start < start + size && start < work.end) {
      state.violations += std::string(what) + " of " + Range(start, size) +
                          " while work queued on stream " +
                          std::to_string(work.stream) + " still uses it\n";
    }
  }
}

void CheckOrderedAfterWork(State& state, uint64_t stream, uintptr_t start,
                           uint64_t size, const char* what) {
  for (const Work& work : state.pending) {
    const bool overlaps = work.start < start + size && start < work.end;
    if (!overlaps || work.stream == stream) continue;
    auto waited = state.waits.find({stream, work.stream});
    if (waited == state.waits.end() || waited->second < work.seq) {
      state.violations += std::string(what) + " on stream " +
                          std::to_string(stream) + " uses " +
                          Range(start, size) + " while stream " +
                          std::to_string(work.stream) +
                          "'s work there is pending, with no event between\n";
    }
  }
}

}  // namespace fake_cuda

extern "C" {

void fake_cuda_launch(CUstream stream, CUdeviceptr ptr, size_t bytes) {
  fake_cuda::State& state = fake_cuda::GetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  const uint64_t id = fake_cuda::Id(stream);
  fake_cuda::CheckOrderedAfterWork(state, id, ptr, bytes, "work");
  state.pending.push_back(
      fake_cuda::Work{id, ptr, ptr + bytes, state.next_work_seq++});
}

const char* fake_cuda_violations(void) {
  fake_cuda::State& state = fake_cuda::GetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.text = state.violations;
  return state.text.c_str();
}

}  // extern "C"
