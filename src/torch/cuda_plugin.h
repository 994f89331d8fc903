// CudaPlugin: what libtensormem_cuda_torch.so serves PyTorch's CUDA tensors
// from. One StreamOrderedAllocator per device, made on the device's first
// request from the allocator specification (any policy and options, over a
// CUDA sub-allocator); an optional trace of every allocation and free with
// its stream and device; and the reason for the last failure, since PyTorch
// only sees nullptr.
//
//   absl::StatusOr<PluginOptions> options =
//       CudaPluginOptions(&std::getenv, R"({"policy": "pytorch"})");
//   absl::StatusOr<std::unique_ptr<CudaPlugin>> plugin =
//       CudaPlugin::Create(options, /*driver=*/nullptr);
//   void* p = (*plugin)->Malloc(1 << 20, /*device=*/0, stream);
//   if (p == nullptr) std::cerr << (*plugin)->LastError();
//   (*plugin)->Free(p, 1 << 20, 0, stream);
#ifndef TENSORMEM_TORCH_CUDA_PLUGIN_H_
#define TENSORMEM_TORCH_CUDA_PLUGIN_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tensormem/cuda/driver.h"
#include "tensormem/cuda/stream_ordered_allocator.h"
#include "tensormem/trace/trace_io.h"
#include "torch/plugin_options.h"

namespace tensormem {

// The plug-in's options: the TENSORMEM_* environment (sub_allocator
// defaulting to cuda-vmm), then the JSON object `options_json` (may be empty)
// with the allocator specification's keys plus trace_path and report_path.
// Errors: those of the specification, or a sub-allocator that is not a
// device one (cuda, cuda-vmm, cuda-async).
absl::StatusOr<PluginOptions> CudaPluginOptions(
    const std::function<const char*(const char*)>& getenv,
    std::string_view options_json);

class CudaPlugin {
 public:
  // Errors: no driver, or a trace file that cannot be created.
  static absl::StatusOr<std::unique_ptr<CudaPlugin>> Create(
      const PluginOptions& options, CudaDriver* driver);
  ~CudaPlugin();

  // nullptr for 0 bytes, and when the request cannot be served (LastError()
  // says why: out of memory with the allocator's report, a bad device, a
  // driver failure).
  void* Malloc(size_t bytes, int device, CUstream stream);
  // Frees after the work queued on `stream`. A pointer it does not own is
  // reported (stderr, LastError()) and ignored: false then.
  bool Free(void* ptr, size_t bytes, int device, CUstream stream);

  std::string LastError() const;
  // Per device: TensorFlow-named allocator stats plus failed_allocs,
  // events_recorded and cross_stream_waits.
  nlohmann::json StatsJson() const;
  // Gives every device's free regions (and over cuda-vmm, free tails and
  // holes' granules) back to the driver, as torch.cuda.empty_cache would;
  // returns the bytes given back.
  uint64_t EmptyCache();
  // An iteration of the program's loop begins, on every device
  // (Allocator::MarkIteration: the planned policy's loop marks).
  void MarkIteration();
  // Writes the report (report_path) and completes the trace.
  absl::Status Finish();
  const PluginOptions& options() const { return options_; }

 private:
  struct Live {
    uint64_t id;
    int device;
  };
  CudaPlugin(PluginOptions options, CudaDriver* driver)
      : options_(std::move(options)), driver_(driver) {}
  absl::StatusOr<StreamOrderedAllocator*> AllocatorFor(int device);
  int32_t StreamIndex(CUstream stream);
  void Record(const TraceEvent& event, int device);
  std::string OutOfMemoryReport(StreamOrderedAllocator& allocator, size_t bytes,
                                int device, CUstream stream);

  const PluginOptions options_;
  CudaDriver* const driver_;
  const std::chrono::steady_clock::time_point start_ =
      std::chrono::steady_clock::now();
  mutable std::mutex mutex_;  // guards everything below
  std::vector<std::unique_ptr<StreamOrderedAllocator>> devices_;
  std::vector<int64_t> failed_allocs_;  // per device
  absl::flat_hash_map<CUstream, int32_t> streams_;
  absl::flat_hash_map<void*, Live> live_;
  uint64_t next_id_ = 0;
  std::unique_ptr<TraceWriter> trace_;
  std::string last_error_;
};

}  // namespace tensormem

#endif  // TENSORMEM_TORCH_CUDA_PLUGIN_H_
