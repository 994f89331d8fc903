// PluginAllocator: the allocator stack PyTorch's CPU tensors are served from.
//
// A BfcAllocator over the chosen sub-allocator, optionally wrapped in a trace
// recorder, plus the counters PyTorch users expect from memory_stats(): live
// (requested) bytes and their peak, frees, failed requests. It holds no torch
// type, so everything but the c10 glue is built and tested without PyTorch.
//
//   absl::StatusOr<std::unique_ptr<PluginAllocator>> allocator =
//       PluginAllocator::Create(options);
//   void* data = (*allocator)->Allocate(4096);   // nullptr when out of memory
//   if (data == nullptr) throw ...((*allocator)->FailureReport(4096));
//   (*allocator)->Free(data);
#ifndef TENSORMEM_TORCH_PLUGIN_ALLOCATOR_H_
#define TENSORMEM_TORCH_PLUGIN_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tensormem/alloc/allocator.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/trace/recording_allocator.h"
#include "tensormem/trace/trace_io.h"
#include "torch/plugin_options.h"

namespace tensormem {

class PluginAllocator {
 public:
  // PyTorch's CPU alignment (c10's gAlignment on servers).
  static constexpr size_t kTensorAlignment = 64;

  // Errors: an unknown sub-allocator, an address space that cannot be
  // reserved, or a trace file that cannot be created (naming the path).
  static absl::StatusOr<std::unique_ptr<PluginAllocator>> Create(
      const PluginOptions& options);

  // Returns kTensorAlignment-aligned memory, or nullptr when `bytes` cannot be
  // served within the limit (also for bytes == 0, which needs no memory).
  void* Allocate(size_t bytes);
  void Free(void* ptr);

  // Why the last failed request failed: the request, the limit, what is in
  // use and free, the largest free block, and whether fragmentation is to
  // blame.
  std::string FailureReport(size_t bytes) const;

  // torch.cuda.memory_stats()-like counters with TensorFlow's names, plus
  // live_bytes, peak_live_bytes, num_frees and num_failed_allocs.
  nlohmann::json StatsJson() const;
  // The BFC memory dump: regions, chunks, bins.
  nlohmann::json DumpJson() const;
  // Peaks start again from the current use (num_allocs restarts too).
  void ResetPeak();
  // An iteration of the program's loop begins (Allocator::MarkIteration).
  void MarkIteration() { top_->MarkIteration(); }

  // Writes the report (when report_path is set) and completes the trace file.
  // Meant for process exit: later frees still work but are not recorded.
  absl::Status Finish();

  const PluginOptions& options() const { return options_; }

 private:
  explicit PluginAllocator(PluginOptions options)
      : options_(std::move(options)) {}

  void RaiseLivePeak(uint64_t live);

  const PluginOptions options_;
  // The allocator: the BFC allocator bfc_ points to, or (the planned
  // policy) the planned allocator over it; bfc_ dumps and explains failures.
  std::unique_ptr<Allocator> owner_;
  BfcAllocator* bfc_ = nullptr;
  std::unique_ptr<TraceWriter> trace_writer_;  // when tracing
  std::unique_ptr<TraceRecordingAllocator>
      recorder_;              // when tracing, over owner_
  Allocator* top_ = nullptr;  // recorder_ or owner_
  std::atomic<uint64_t> live_bytes_{0};
  std::atomic<uint64_t> peak_live_bytes_{0};
  std::atomic<uint64_t> num_frees_{0};
  std::atomic<uint64_t> num_failed_allocs_{0};
};

}  // namespace tensormem

#endif  // TENSORMEM_TORCH_PLUGIN_ALLOCATOR_H_
