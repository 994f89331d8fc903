#include "torch/plugin_options.h"

#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tensormem/core/status_macros.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

// This Abseil's string_view is not std::string_view.
absl::string_view ToAbsl(std::string_view text) {
  return absl::string_view(text.data(), text.size());
}

// The plug-in hands out memory that tensors write to.
absl::Status CheckUsable(const AllocatorSpec& spec) {
  if (spec.kind != "bfc") {
    return absl::InvalidArgumentError(absl::StrCat(
        "allocator '", spec.kind, "' cannot serve PyTorch (only bfc)"));
  }
  if (spec.sub_allocator == "simulated") {
    return absl::InvalidArgumentError(
        "sub_allocator 'simulated' holds no memory a tensor could use (use "
        "host or vmm)");
  }
  return absl::OkStatus();
}

// A JSON value as the text SetAllocatorOption parses.
absl::StatusOr<std::string> OptionText(const std::string& key,
                                       const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return std::string(value.get<bool>() ? "1" : "0");
  if (value.is_number_unsigned() || value.is_number_integer() ||
      value.is_number_float()) {
    return value.dump();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(key, "=", value.dump(), " is not a string, number or bool"));
}

}  // namespace

AllocatorSpec DefaultPluginSpec() {
  AllocatorSpec spec;
  spec.sub_allocator = "host";
  spec.capacity = 0;
  return spec;
}

absl::StatusOr<PluginOptions> OptionsFromEnvironment(
    const std::function<const char*(const char*)>& getenv) {
  PluginOptions options;
  TM_RETURN_IF_ERROR(ApplyAllocatorEnvironment(options.allocator, getenv));
  if (absl::Status usable = CheckUsable(options.allocator); !usable.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("TENSORMEM_* variables: ", usable.message()));
  }
  if (const char* text = getenv("TENSORMEM_TRACE")) options.trace_path = text;
  if (const char* text = getenv("TENSORMEM_REPORT")) options.report_path = text;
  return options;
}

absl::Status ApplyOptionsJson(std::string_view json_text,
                              PluginOptions* options) {
  nlohmann::json json =
      nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("options are not a JSON object: ", ToAbsl(json_text)));
  }
  for (const auto& [key, value] : json.items()) {
    if (key == "trace_path" || key == "report_path") {
      if (!value.is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat(key, "=", value.dump(), " is not a string"));
      }
      (key == "trace_path" ? options->trace_path : options->report_path) =
          value.get<std::string>();
      continue;
    }
    const std::string spec_key = key == "allow_growth"         ? "growth"
                                 : key == "garbage_collection" ? "gc"
                                                               : key;
    if ((spec_key == "growth" || spec_key == "gc") && !value.is_boolean()) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, "=", value.dump(), " is not a boolean"));
    }
    TM_ASSIGN_OR_RETURN(std::string text, OptionText(key, value));
    absl::Status status =
        SetAllocatorOption(options->allocator, spec_key, text);
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(status.message(),
                       " (the plug-in also takes trace_path, report_path)"));
    }
  }
  return CheckUsable(options->allocator);
}

uint64_t ResolvedMemoryLimit(const PluginOptions& options) {
  if (options.allocator.memory_limit) return *options.allocator.memory_limit;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 16 * kGiB;  // unknown: a safe guess
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

}  // namespace tensormem
