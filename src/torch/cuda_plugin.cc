#include "torch/cuda_plugin.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/cuda/cuda_sub_allocators.h"
#include "tensormem/trace/replay.h"

namespace tensormem {

absl::StatusOr<PluginOptions> CudaPluginOptions(
    const std::function<const char*(const char*)>& getenv,
    std::string_view options_json) {
  // The options name only kinds that are registered.
  RegisterCudaSubAllocators();
  auto with_device_default = [&getenv](const char* name) -> const char* {
    const char* value = getenv(name);
    const bool unset = value == nullptr || *value == '\0';
    if (unset && std::string_view(name) == "TENSORMEM_SUB_ALLOCATOR") {
      return "cuda-vmm";
    }
    return value;
  };
  TM_ASSIGN_OR_RETURN(PluginOptions options,
                      OptionsFromEnvironment(with_device_default));
  if (!options_json.empty()) {
    TM_RETURN_IF_ERROR(ApplyOptionsJson(options_json, &options));
  }
  const std::string& kind = options.allocator.sub_allocator;
  if (kind != "cuda" && kind != "cuda-vmm" && kind != "cuda-async") {
    return absl::InvalidArgumentError(
        absl::StrCat("sub_allocator '", kind,
                     "': the CUDA plug-in uses cuda, cuda-vmm or cuda-async"));
  }
  return options;
}

absl::StatusOr<std::unique_ptr<CudaPlugin>> CudaPlugin::Create(
    const PluginOptions& options, CudaDriver* driver) {
  if (driver == nullptr) {
    TM_ASSIGN_OR_RETURN(driver, CudaDriver::Get());
  }
  RegisterCudaSubAllocators();
  std::unique_ptr<CudaPlugin> plugin(new CudaPlugin(options, driver));
  if (!options.trace_path.empty()) {
    TM_ASSIGN_OR_RETURN(plugin->trace_, TraceWriter::Open(options.trace_path));
  }
  return plugin;
}

CudaPlugin::~CudaPlugin() = default;

absl::StatusOr<StreamOrderedAllocator*> CudaPlugin::AllocatorFor(int device) {
  if (device >= 0 && device < static_cast<int>(devices_.size()) &&
      devices_[device] != nullptr) {
    return devices_[device].get();
  }
  const CudaDeviceScope scope(*driver_, device);
  TM_RETURN_IF_ERROR(scope.status());  // checks the device
  TM_ASSIGN_OR_RETURN(const uint64_t total, driver_->TotalMemory(device));
  AllocatorSpec spec = options_.allocator;
  spec.device = device;
  if (!spec.memory_limit) spec.memory_limit = total;
  if (spec.capacity == 0) spec.capacity = 2 * total;  // cuda-vmm's reservation
  BfcAllocatorOptions bfc;
  bfc.name = absl::StrCat("tensormem_cuda_", device);
  // PyTorch frees its cache and retries itself when malloc fails.
  bfc.allow_retry_on_failure = false;
  bfc.log_failures = false;
  TM_ASSIGN_OR_RETURN(BuiltAllocator built, CreateAllocator(spec, bfc));
  if (built.bfc == nullptr || !built.wrapped.empty()) {
    return absl::InvalidArgumentError("the CUDA plug-in needs allocator bfc");
  }
  if (static_cast<int>(devices_.size()) <= device) {
    devices_.resize(device + 1);
    failed_allocs_.resize(device + 1, 0);
  }
  devices_[device] = std::make_unique<StreamOrderedAllocator>(
      std::move(built.allocator), built.bfc, driver_, device);
  return devices_[device].get();
}

int32_t CudaPlugin::StreamIndex(CUstream stream) {
  if (stream == nullptr) return 0;  // the default stream
  auto [it, inserted] =
      streams_.try_emplace(stream, static_cast<int32_t>(streams_.size() + 1));
  return it->second;
}

void CudaPlugin::Record(const TraceEvent& event, int device) {
  if (trace_ == nullptr) return;
  TraceEvent timed = event;
  timed.time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - start_)
                      .count();
  trace_->Write(timed, {}, absl::StrCat("device=", device));
}

std::string CudaPlugin::OutOfMemoryReport(StreamOrderedAllocator& allocator,
                                          size_t bytes, int device,
                                          CUstream stream) {
  std::string report = absl::StrCat(
      "tensormem: out of memory on CUDA device ", device, " allocating ",
      DescribeBytes(bytes), " on stream ", StreamIndex(stream), ": ",
      allocator.bfc().LastFailureReport());
  if (!allocator.last_error().ok()) {
    absl::StrAppend(&report, "\n", allocator.last_error().message());
  }
  if (auto* cuda =
          dynamic_cast<CudaSubAllocatorBase*>(&allocator.bfc().upstream());
      cuda != nullptr && !cuda->last_error().ok()) {
    absl::StrAppend(&report, "\ndriver: ", cuda->last_error().message());
  }
  return report;
}

void* CudaPlugin::Malloc(size_t bytes, int device, CUstream stream) {
  if (bytes == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  absl::StatusOr<StreamOrderedAllocator*> allocator = AllocatorFor(device);
  if (!allocator.ok()) {
    last_error_ = absl::StrCat("tensormem: CUDA device ", device, ": ",
                               allocator.status().message());
    return nullptr;
  }
  TraceEvent event = TraceEvent::Alloc(next_id_++, bytes);
  event.stream = StreamIndex(stream);
  void* ptr = (*allocator)->Allocate(bytes, stream);
  if (ptr == nullptr) {
    ++failed_allocs_[device];
    last_error_ = OutOfMemoryReport(**allocator, bytes, device, stream);
    event.failed = true;
    Record(event, device);
    return nullptr;
  }
  live_[ptr] = Live{event.id, device};
  Record(event, device);
  return ptr;
}

bool CudaPlugin::Free(void* ptr, size_t bytes, int device, CUstream stream) {
  if (ptr == nullptr) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = live_.find(ptr);
  if (found == live_.end() || found->second.device != device) {
    last_error_ = absl::StrCat(
        "tensormem: free of ", DescribeBytes(bytes), " at ",
        reinterpret_cast<uintptr_t>(ptr), " on CUDA device ", device,
        ", which tensormem did not allocate there: ignored");
    std::fprintf(stderr, "%s\n", last_error_.c_str());
    return false;
  }
  TraceEvent event = TraceEvent::Free(found->second.id);
  event.stream = StreamIndex(stream);
  live_.erase(found);
  absl::Status status = devices_[device]->Free(ptr, stream);
  Record(event, device);
  if (status.ok()) return true;
  last_error_ = std::string(status.message());
  return false;
}

std::string CudaPlugin::LastError() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_error_;
}

nlohmann::json CudaPlugin::StatsJson() const {
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::json devices = nlohmann::json::object();
  for (size_t device = 0; device < devices_.size(); ++device) {
    if (devices_[device] == nullptr) continue;
    StreamOrderedAllocator& allocator = *devices_[device];
    nlohmann::json stats =
        AllocatorStatsToJson(*allocator.allocator().GetStats());
    stats["failed_allocs"] = failed_allocs_[device];
    stats["events_recorded"] = allocator.events_recorded();
    stats["cross_stream_waits"] = allocator.cross_stream_waits();
    stats["sub_allocator"] = allocator.bfc().upstream().Name();
    devices[std::to_string(device)] = std::move(stats);
  }
  return nlohmann::json{{"devices", devices}, {"live_blocks", live_.size()}};
}

uint64_t CudaPlugin::EmptyCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t released = 0;
  for (const std::unique_ptr<StreamOrderedAllocator>& allocator : devices_) {
    if (allocator == nullptr) continue;
    BfcAllocator& bfc = allocator->bfc();
    const uint64_t before = bfc.GetStats()->pool_bytes;
    bfc.ReleaseFreeRegions();
    released += before - bfc.GetStats()->pool_bytes;
  }
  return released;
}

void CudaPlugin::MarkIteration() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const std::unique_ptr<StreamOrderedAllocator>& allocator : devices_) {
    if (allocator != nullptr) allocator->allocator().MarkIteration();
  }
}

absl::Status CudaPlugin::Finish() {
  if (!options_.report_path.empty()) {
    std::ofstream report(options_.report_path);
    report << StatsJson().dump(2) << "\n";
    if (!report) {
      return absl::InternalError(
          absl::StrCat("cannot write the report ", options_.report_path));
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (trace_ != nullptr) return trace_->Close();
  return absl::OkStatus();
}

}  // namespace tensormem
