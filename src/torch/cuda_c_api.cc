// The C entry points of libtensormem_cuda_torch.so.
//
// tensormem_cuda_malloc_or_throw / tensormem_cuda_free are the two functions
// torch.cuda.memory.CUDAPluggableAllocator loads; the others serve
// tensormem_torch.enable_cuda (ctypes). The allocators are built by the first
// enable, or by the first malloc from the TENSORMEM_* environment. Strings
// returned are malloc'd; free them with tensormem_cuda_free_string.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "torch/cuda_plugin.h"

namespace tensormem {
namespace {

std::mutex g_mutex;
// Never destroyed: PyTorch may free tensors after static destructors ran.
std::atomic<CudaPlugin*> g_plugin{nullptr};
std::string g_last_error;  // guarded by g_mutex: the latest failure

char* CopyForCaller(const std::string& text) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy != nullptr) std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

void FinishAtExit() {
  CudaPlugin* plugin = g_plugin.load();
  if (plugin == nullptr) return;
  absl::Status status = plugin->Finish();
  if (!status.ok()) {
    std::fprintf(stderr, "tensormem_cuda_torch: %s\n",
                 std::string(status.message()).c_str());
  }
}

absl::Status Enable(const char* options_json) {
  absl::StatusOr<PluginOptions> options = CudaPluginOptions(
      &std::getenv, options_json == nullptr ? "" : options_json);
  if (!options.ok()) return options.status();
  std::lock_guard<std::mutex> lock(g_mutex);
  if (CudaPlugin* plugin = g_plugin.load(); plugin != nullptr) {
    if (plugin->options() == *options) return absl::OkStatus();
    return absl::FailedPreconditionError(
        "tensormem's CUDA allocator is already set up with other options; "
        "options apply only to the first enable in a process");
  }
  absl::StatusOr<std::unique_ptr<CudaPlugin>> plugin =
      CudaPlugin::Create(*options, /*driver=*/nullptr);
  if (!plugin.ok()) return plugin.status();
  g_plugin.store(plugin->release());
  std::atexit(&FinishAtExit);
  return absl::OkStatus();
}

void SetLastError(std::string error) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_last_error = std::move(error);
}

CudaPlugin* PluginOrEnable() {
  if (CudaPlugin* plugin = g_plugin.load()) return plugin;
  absl::Status status = Enable(nullptr);
  if (!status.ok()) {
    SetLastError(std::string(status.message()));
    return nullptr;
  }
  return g_plugin.load();
}

}  // namespace
}  // namespace tensormem

#define TENSORMEM_EXPORT extern "C" __attribute__((visibility("default")))

// nullptr when out of memory; tensormem_cuda_last_error() says why.
TENSORMEM_EXPORT void* tensormem_cuda_malloc(size_t size, int device,
                                             void* stream) {
  tensormem::CudaPlugin* plugin = tensormem::PluginOrEnable();
  if (plugin == nullptr) return nullptr;
  void* ptr = plugin->Malloc(size, device, static_cast<CUstream>(stream));
  if (ptr == nullptr && size > 0) tensormem::SetLastError(plugin->LastError());
  return ptr;
}

// What CUDAPluggableAllocator should load (tensormem_torch.enable_cuda
// does): PyTorch uses whatever its allocator returns, so out of memory (or a
// failed setup) is thrown as std::runtime_error, which PyTorch raises in
// Python as RuntimeError("CUDA out of memory. ... tensormem: ...") at the
// allocation, instead of a null pointer failing later. Not for callers that
// cannot take a C++ exception (ctypes): they use tensormem_cuda_malloc.
TENSORMEM_EXPORT void* tensormem_cuda_malloc_or_throw(size_t size, int device,
                                                      void* stream) {
  void* ptr = tensormem_cuda_malloc(size, device, stream);
  if (ptr == nullptr && size > 0) {
    std::lock_guard<std::mutex> lock(tensormem::g_mutex);
    throw std::runtime_error("CUDA out of memory. " + tensormem::g_last_error);
  }
  return ptr;
}

TENSORMEM_EXPORT void tensormem_cuda_free(void* ptr, size_t size, int device,
                                          void* stream) {
  tensormem::CudaPlugin* plugin = tensormem::g_plugin.load();
  if (plugin == nullptr) return;  // nothing was ever allocated here
  if (!plugin->Free(ptr, size, device, static_cast<CUstream>(stream))) {
    tensormem::SetLastError(plugin->LastError());
  }
}

// Sets the options (JSON object, may be NULL) before the first allocation.
// 0, or -1 with the reason in tensormem_cuda_last_error().
TENSORMEM_EXPORT int tensormem_cuda_enable(const char* options_json) {
  absl::Status status = tensormem::Enable(options_json);
  if (status.ok()) return 0;
  tensormem::SetLastError(std::string(status.message()));
  return -1;
}

TENSORMEM_EXPORT int tensormem_cuda_is_enabled() {
  return tensormem::g_plugin.load() != nullptr;
}

// The last failure (setup, out of memory, bad free) or "".
TENSORMEM_EXPORT char* tensormem_cuda_last_error() {
  std::lock_guard<std::mutex> lock(tensormem::g_mutex);
  return tensormem::CopyForCaller(tensormem::g_last_error);
}

// Per-device statistics as JSON, or NULL before the allocators exist.
TENSORMEM_EXPORT char* tensormem_cuda_stats_json() {
  tensormem::CudaPlugin* plugin = tensormem::g_plugin.load();
  if (plugin == nullptr) return nullptr;
  return tensormem::CopyForCaller(plugin->StatsJson().dump());
}

// Gives free device memory back to the driver; the bytes given back (0
// before the allocators exist). PyTorch's torch.cuda.empty_cache cannot reach
// the plug-in: tensormem_torch.empty_cache calls this.
TENSORMEM_EXPORT uint64_t tensormem_cuda_empty_cache() {
  tensormem::CudaPlugin* plugin = tensormem::g_plugin.load();
  return plugin == nullptr ? 0 : plugin->EmptyCache();
}

// An iteration of the program's loop begins (the planned policy learns the
// loop from these marks); -1 before the plug-in is configured.
TENSORMEM_EXPORT int tensormem_cuda_mark_iteration() {
  tensormem::CudaPlugin* plugin = tensormem::g_plugin.load();
  if (plugin == nullptr) return -1;
  plugin->MarkIteration();
  return 0;
}

// Writes the report and completes the trace now (also done at exit).
TENSORMEM_EXPORT int tensormem_cuda_finish() {
  tensormem::CudaPlugin* plugin = tensormem::g_plugin.load();
  return plugin == nullptr || plugin->Finish().ok() ? 0 : -1;
}

TENSORMEM_EXPORT void tensormem_cuda_free_string(char* text) {
  std::free(text);
}
