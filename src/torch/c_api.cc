// The C entry points of libtensormem_torch.so, for ctypes
// (python/tensormem/torch.py).
//
// Strings returned to the caller are malloc'd and freed with
// tensormem_torch_free_string. Errors are kept per process and read with
// tensormem_torch_last_error. Loading the library with TENSORMEM_ENABLE=1 in
// the environment enables the allocator at once (for non-Python programs).
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "torch/plugin_allocator.h"
#include "torch/plugin_options.h"
#include "torch/torch_cpu_allocator.h"

namespace tensormem {
namespace {

std::mutex g_mutex;
// Never destroyed: tensors may be freed during interpreter shutdown, after
// static destructors would have run.
PluginAllocator* g_allocator = nullptr;
std::string g_last_error;

char* CopyForCaller(const std::string& text) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy != nullptr) std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

void WriteReportAtExit() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_allocator == nullptr) return;
  absl::Status status = g_allocator->Finish();
  if (!status.ok()) {
    std::fprintf(stderr, "tensormem_torch: %s\n",
                 std::string(status.message()).c_str());
  }
}

absl::Status Enable(const char* options_json) {
  absl::StatusOr<PluginOptions> options = OptionsFromEnvironment(&std::getenv);
  if (!options.ok()) return options.status();
  if (options_json != nullptr && *options_json != '\0') {
    absl::Status status = ApplyOptionsJson(options_json, &*options);
    if (!status.ok()) return status;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_allocator != nullptr) {
    if (g_allocator->options() == *options) return absl::OkStatus();
    return absl::FailedPreconditionError(
        "tensormem is already PyTorch's CPU allocator with other options; "
        "options apply "
        "only to the first enable in a process");
  }
  absl::StatusOr<std::unique_ptr<PluginAllocator>> allocator =
      PluginAllocator::Create(*options);
  if (!allocator.ok()) return allocator.status();
  g_allocator = allocator->release();
  InstallAsTorchCpuAllocator(g_allocator);
  std::atexit(&WriteReportAtExit);
  return absl::OkStatus();
}

template <typename Produce>
char* JsonForCaller(Produce produce) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_allocator == nullptr) {
    g_last_error = "tensormem is not enabled: call enable() first";
    return nullptr;
  }
  return CopyForCaller(produce(*g_allocator).dump());
}

__attribute__((constructor)) void EnableFromEnvironment() {
  const char* flag = std::getenv("TENSORMEM_ENABLE");
  if (flag == nullptr || std::strcmp(flag, "1") != 0) return;
  absl::Status status = Enable(nullptr);
  if (!status.ok()) {
    std::fprintf(
        stderr, "tensormem_torch: TENSORMEM_ENABLE=1 but enabling failed: %s\n",
        std::string(status.message()).c_str());
  }
}

}  // namespace
}  // namespace tensormem

extern "C" {

// Makes tensormem PyTorch's CPU allocator. `options_json` (may be NULL) is a
// JSON object overriding the TENSORMEM_* environment. Returns 0, or the
// absl::StatusCode of the failure (3: a bad option, 9: already enabled with
// other options, ...) with the reason in tensormem_torch_last_error().
__attribute__((visibility("default"))) int tensormem_torch_enable(
    const char* options_json) {
  absl::Status status = tensormem::Enable(options_json);
  if (status.ok()) return 0;
  std::lock_guard<std::mutex> lock(tensormem::g_mutex);
  tensormem::g_last_error = std::string(status.message());
  return static_cast<int>(status.code());
}

__attribute__((visibility("default"))) int tensormem_torch_is_enabled() {
  std::lock_guard<std::mutex> lock(tensormem::g_mutex);
  return tensormem::g_allocator != nullptr;
}

// The last error as a malloc'd string ("" when none).
__attribute__((visibility("default"))) char* tensormem_torch_last_error() {
  std::lock_guard<std::mutex> lock(tensormem::g_mutex);
  return tensormem::CopyForCaller(tensormem::g_last_error);
}

// Statistics as a JSON object, or NULL when not enabled.
__attribute__((visibility("default"))) char* tensormem_torch_stats_json() {
  return tensormem::JsonForCaller(
      [](const tensormem::PluginAllocator& allocator) {
        return allocator.StatsJson();
      });
}

// The memory dump (regions, chunks, bins) as a JSON object, or NULL.
__attribute__((visibility("default"))) char* tensormem_torch_dump_json() {
  return tensormem::JsonForCaller(
      [](const tensormem::PluginAllocator& allocator) {
        return allocator.DumpJson();
      });
}

// Restarts the peaks from the current use. Returns -1 when not enabled.
__attribute__((visibility("default"))) int tensormem_torch_reset_peak() {
  std::lock_guard<std::mutex> lock(tensormem::g_mutex);
  if (tensormem::g_allocator == nullptr) return -1;
  tensormem::g_allocator->ResetPeak();
  return 0;
}

// Tells the allocator an iteration of the program's loop begins (the planned
// policy learns the loop from these marks). Returns -1 when not enabled.
__attribute__((visibility("default"))) int tensormem_torch_mark_iteration() {
  std::lock_guard<std::mutex> lock(tensormem::g_mutex);
  if (tensormem::g_allocator == nullptr) return -1;
  tensormem::g_allocator->MarkIteration();
  return 0;
}

__attribute__((visibility("default"))) void tensormem_torch_free_string(
    char* text) {
  std::free(text);
}

}  // extern "C"
