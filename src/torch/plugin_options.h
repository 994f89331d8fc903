// PluginOptions: how the PyTorch plug-in builds its allocator.
//
// Read from the environment (TENSORMEM_MEMORY_LIMIT, TENSORMEM_SUB_ALLOCATOR,
// TENSORMEM_GROWTH, TENSORMEM_GC, TENSORMEM_TRACE, TENSORMEM_REPORT), then
// overridden by the JSON object the Python `enable(**options)` call passes.
// No torch header here, so the parsing is tested without PyTorch.
//
//   absl::StatusOr<PluginOptions> options =
//   OptionsFromEnvironment(std::getenv); if (options.ok()) status =
//   ApplyOptionsJson(R"({"memory_limit": "2G"})", &*options);
#ifndef TENSORMEM_TORCH_PLUGIN_OPTIONS_H_
#define TENSORMEM_TORCH_PLUGIN_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tensormem {

struct PluginOptions {
  // 0 means "the machine's physical memory" (resolved by ResolvedMemoryLimit).
  uint64_t memory_limit = 0;
  std::string sub_allocator = "host";  // host | vmm
  bool allow_growth = true;  // grow the pool on demand, or take it all at once
  bool garbage_collection =
      false;                // return free regions upstream before failing
  std::string trace_path;   // record every alloc/free here when set
  std::string report_path;  // stats + memory dump JSON at exit when set
};

// Reads the TENSORMEM_* variables through `getenv` (std::getenv in production,
// a map in tests). Errors name the variable and its value.
absl::StatusOr<PluginOptions> OptionsFromEnvironment(
    const std::function<const char*(const char*)>& getenv);

// Overrides fields from a JSON object with keys memory_limit (bytes or a size
// text such as "2GiB"), sub_allocator, allow_growth, garbage_collection,
// trace_path, report_path. Unknown keys are errors, so typos are not ignored.
absl::Status ApplyOptionsJson(std::string_view json_text,
                              PluginOptions* options);

// The limit actually used: memory_limit, or the physical memory when it is 0.
uint64_t ResolvedMemoryLimit(const PluginOptions& options);

}  // namespace tensormem

#endif  // TENSORMEM_TORCH_PLUGIN_OPTIONS_H_
