// PluginOptions: how the PyTorch plug-in builds its allocator.
//
// The allocator is described by the allocator specification
// (allocator_spec.h) read from the TENSORMEM_* variables (TENSORMEM_POLICY,
// TENSORMEM_CONFIG, TENSORMEM_MEMORY_LIMIT, TENSORMEM_SUB_ALLOCATOR,
// TENSORMEM_GROWTH, TENSORMEM_GC, ...), plus TENSORMEM_TRACE and
// TENSORMEM_REPORT; then overridden by the JSON object the Python
// `enable(**options)` call passes. No torch header here, so the parsing is
// tested without PyTorch.
//
//   absl::StatusOr<PluginOptions> options =
//   OptionsFromEnvironment(std::getenv); if (options.ok())
//     status = ApplyOptionsJson(R"({"memory_limit": "2G"})", &*options);
#ifndef TENSORMEM_TORCH_PLUGIN_OPTIONS_H_
#define TENSORMEM_TORCH_PLUGIN_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tensormem/alloc/allocator_spec.h"

namespace tensormem {

// The plug-in's defaults: the default policy over the vmm sub-allocator,
// limited to the machine's physical memory (memory_limit unset), with an
// address space of twice the limit (capacity 0; reserved, not committed: the
// holes the policy gives back keep their addresses, and the pool must still
// be able to grow to the limit past them). vmm rather than host memory: the
// tight policy extends regions in place and gives the pages of free holes back
// only over an upstream that can; over host memory the pool held 1.16-1.42x
// peak live in real runs (docs/pytorch.md).
AllocatorSpec DefaultPluginSpec();

struct PluginOptions {
  AllocatorSpec allocator = DefaultPluginSpec();
  std::string trace_path;   // record every alloc/free here when set
  std::string report_path;  // stats + memory dump JSON at exit when set

  friend bool operator==(const PluginOptions&, const PluginOptions&) = default;
};

// Reads the TENSORMEM_* variables through `getenv` (std::getenv in production,
// a map in tests). Errors name the variable and its value.
absl::StatusOr<PluginOptions> OptionsFromEnvironment(
    const std::function<const char*(const char*)>& getenv);

// Overrides options from a JSON object whose keys are the allocator
// specification's (memory_limit as bytes or a size text such as "2GiB",
// policy, config, sub_allocator, growth, gc, ...; allow_growth and
// garbage_collection are accepted for growth and gc) plus trace_path and
// report_path. Unknown keys are errors, so typos are not ignored.
absl::Status ApplyOptionsJson(std::string_view json_text,
                              PluginOptions* options);

// The limit actually used: memory_limit, or the physical memory when unset.
uint64_t ResolvedMemoryLimit(const PluginOptions& options);

}  // namespace tensormem

#endif  // TENSORMEM_TORCH_PLUGIN_OPTIONS_H_
