#include "torch/plugin_allocator.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tensormem/alloc/memory_dump.h"
#include "tensormem/core/checked_math.h"
#include "tensormem/core/units.h"
#include "tensormem/trace/replay.h"

namespace tensormem {

absl::StatusOr<std::unique_ptr<PluginAllocator>> PluginAllocator::Create(
    const PluginOptions& options) {
  AllocatorSpec spec = options.allocator;
  spec.memory_limit = ResolvedMemoryLimit(options);
  if (spec.capacity == 0) {  // twice the limit, unless that overflows
    spec.capacity = CheckedMul(*spec.memory_limit, uint64_t{2})
                        .value_or(*spec.memory_limit);
  }
  BfcAllocator::Options bfc_options;
  bfc_options.name = "tensormem_torch";
  // PyTorch's own CPU allocator fails at once; waiting for frees from other
  // threads would only delay the error an out-of-memory program gets.
  bfc_options.allow_retry_on_failure = false;
  // The error PyTorch raises carries the report.
  bfc_options.log_failures = false;
  absl::StatusOr<BuiltAllocator> built =
      CreateAllocator(spec, std::move(bfc_options));
  if (!built.ok()) return built.status();
  std::unique_ptr<PluginAllocator> plugin(new PluginAllocator(options));
  plugin->owner_ = std::move(built->allocator);
  plugin->bfc_ = built->bfc;
  plugin->top_ = plugin->owner_.get();
  if (!options.trace_path.empty()) {
    absl::StatusOr<std::unique_ptr<TraceWriter>> writer =
        TraceWriter::Open(options.trace_path);
    if (!writer.ok()) return writer.status();
    plugin->trace_writer_ = *std::move(writer);
    plugin->recorder_ = std::make_unique<TraceRecordingAllocator>(
        *plugin->owner_, *plugin->trace_writer_);
    plugin->top_ = plugin->recorder_.get();
  }
  return plugin;
}

void* PluginAllocator::Allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* ptr = top_->Allocate(bytes, kTensorAlignment);
  if (ptr == nullptr) {
    num_failed_allocs_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  RaiseLivePeak(live_bytes_.fetch_add(bytes, std::memory_order_relaxed) +
                bytes);
  return ptr;
}

void PluginAllocator::Free(void* ptr) {
  if (ptr == nullptr) return;
  // Asked before the free: afterwards the block is unknown.
  const size_t bytes = owner_->RequestedSize(ptr).value_or(0);
  top_->Deallocate(ptr);
  live_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  num_frees_.fetch_add(1, std::memory_order_relaxed);
}

void PluginAllocator::RaiseLivePeak(uint64_t live) {
  uint64_t peak = peak_live_bytes_.load(std::memory_order_relaxed);
  while (live > peak && !peak_live_bytes_.compare_exchange_weak(
                            peak, live, std::memory_order_relaxed)) {
  }
}

std::string PluginAllocator::FailureReport(size_t bytes) const {
  std::string report = bfc_->LastFailureReport();
  if (report.empty()) {
    report = absl::StrCat("could not allocate ", bytes, " bytes (",
                          HumanBytes(bytes), ")");
  }
  return absl::StrCat(
      "tensormem: out of memory in PyTorch's CPU allocator "
      "(TENSORMEM_MEMORY_LIMIT=",
      ResolvedMemoryLimit(options_), ").\n", report);
}

nlohmann::json PluginAllocator::StatsJson() const {
  nlohmann::json json;
  const std::optional<AllocatorStats> stats = owner_->GetStats();
  if (stats.has_value()) {
    json["num_allocs"] = stats->num_allocs;
    json["bytes_in_use"] = stats->bytes_in_use;
    json["peak_bytes_in_use"] = stats->peak_bytes_in_use;
    json["largest_alloc_size"] = stats->largest_alloc_size;
    json["bytes_limit"] =
        stats->bytes_limit.value_or(ResolvedMemoryLimit(options_));
    json["pool_bytes"] = stats->pool_bytes;
    json["peak_pool_bytes"] = stats->peak_pool_bytes;
    json["largest_free_block_bytes"] = stats->largest_free_block_bytes;
    AddLoopStatsJson(*stats, json);  // under the planned policy
  }
  json["live_bytes"] = live_bytes_.load(std::memory_order_relaxed);
  json["peak_live_bytes"] = peak_live_bytes_.load(std::memory_order_relaxed);
  json["num_frees"] = num_frees_.load(std::memory_order_relaxed);
  json["num_failed_allocs"] =
      num_failed_allocs_.load(std::memory_order_relaxed);
  json["sub_allocator"] = options_.allocator.sub_allocator;
  json["policy"] = bfc_->PolicyDescription();
  return json;
}

nlohmann::json PluginAllocator::DumpJson() const {
  return bfc_->RecordMemoryDump().ToJson();
}

void PluginAllocator::ResetPeak() {
  owner_->ClearStats();
  peak_live_bytes_.store(live_bytes_.load(std::memory_order_relaxed),
                         std::memory_order_relaxed);
}

absl::Status PluginAllocator::Finish() {
  if (trace_writer_ != nullptr) {
    absl::Status status = trace_writer_->Close();
    if (!status.ok()) return status;
  }
  if (options_.report_path.empty()) return absl::OkStatus();
  nlohmann::json report;
  report["stats"] = StatsJson();
  report["memory_dump"] = DumpJson();
  FILE* file = std::fopen(options_.report_path.c_str(), "w");
  if (file == nullptr) {
    return absl::UnavailableError(
        absl::StrCat(options_.report_path, ": cannot create the report file"));
  }
  const std::string text = report.dump(2) + "\n";
  const bool written =
      std::fwrite(text.data(), 1, text.size(), file) == text.size();
  if (std::fclose(file) != 0 || !written) {
    return absl::DataLossError(
        absl::StrCat(options_.report_path, ": write failed"));
  }
  return absl::OkStatus();
}

}  // namespace tensormem
