#include "torch/plugin_options.h"

#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/alloc/sub_allocator_registry.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

// This Abseil's string_view is not std::string_view.
absl::string_view ToAbsl(std::string_view text) {
  return absl::string_view(text.data(), text.size());
}

bool IsAllocatorOption(std::string_view key) {
  for (const AllocatorOptionInfo& info : AllocatorOptions()) {
    if (info.key == key) return true;
  }
  return false;
}

// Names the registries know, checked now so a typo in the environment or the
// options fails `enable()` rather than the first allocation. `variables`:
// errors name TENSORMEM_<KEY> rather than the key.
absl::Status CheckKnown(const AllocatorSpec& spec, bool variables) {
  auto named = [variables](std::string_view key) {
    return variables
               ? absl::StrCat("TENSORMEM_", absl::AsciiStrToUpper(ToAbsl(key)))
               : std::string(key);
  };
  bool known = false;
  std::vector<std::string> kinds;
  for (const SubAllocatorInfo& info : SubAllocatorKinds()) {
    known = known || info.name == spec.sub_allocator;
    kinds.emplace_back(info.name);
  }
  if (!known) {
    return absl::InvalidArgumentError(absl::StrCat(
        named("sub_allocator"), ": unknown sub-allocator kind '",
        spec.sub_allocator, "' (known: ", absl::StrJoin(kinds, ", "), ")"));
  }
  std::vector<std::string> policies;
  for (const PolicyInfo& info : Policies()) {
    if (info.name == spec.policy) return absl::OkStatus();
    policies.emplace_back(info.name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat(named("policy"), ": unknown policy '", spec.policy,
                   "' (known: ", absl::StrJoin(policies, ", "), ")"));
}

// A check's message that starts with an option key ("config: ...") names the
// variable that set it instead (TENSORMEM_CONFIG); others name them all.
std::string NameVariable(std::string_view message) {
  const size_t colon = message.find(": ");
  for (const AllocatorOptionInfo& option : AllocatorOptions()) {
    if (colon != std::string_view::npos &&
        message.substr(0, colon) == option.key) {
      return absl::StrCat("TENSORMEM_",
                          absl::AsciiStrToUpper(ToAbsl(option.key)),
                          ToAbsl(message.substr(colon)));
    }
  }
  return absl::StrCat("TENSORMEM_* variables: ", ToAbsl(message));
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
  return ValidateAllocatorSpec(spec);
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
  spec.sub_allocator = "vmm";
  spec.capacity = 0;
  return spec;
}

absl::StatusOr<PluginOptions> OptionsFromEnvironment(
    const std::function<const char*(const char*)>& getenv) {
  PluginOptions options;
  TM_RETURN_IF_ERROR(ApplyAllocatorEnvironment(options.allocator, getenv));
  TM_RETURN_IF_ERROR(CheckKnown(options.allocator, /*variables=*/true));
  if (absl::Status usable = CheckUsable(options.allocator); !usable.ok()) {
    return absl::InvalidArgumentError(NameVariable(
        std::string_view(usable.message().data(), usable.message().size())));
  }
  if (const char* text = getenv("TENSORMEM_TRACE")) options.trace_path = text;
  if (const char* text = getenv("TENSORMEM_REPORT")) options.report_path = text;
  return options;
}

absl::Status ApplyOptionsJson(std::string_view json_text,
                              PluginOptions* options) {
  // Applied to a copy: options refused anywhere leave `options` as they were.
  PluginOptions updated = *options;
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {  // the message has the byte
    return absl::InvalidArgumentError(
        absl::StrCat("options are not valid JSON: ", e.what()));
  }
  if (!json.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("options are not a JSON object but ", json.type_name()));
  }
  for (const auto& [key, value] : json.items()) {
    if (key == "trace_path" || key == "report_path") {
      if (!value.is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat(key, "=", value.dump(), " is not a string"));
      }
      (key == "trace_path" ? updated.trace_path : updated.report_path) =
          value.get<std::string>();
      continue;
    }
    const std::string spec_key(CanonicalAllocatorOption(key));
    if ((spec_key == "growth" || spec_key == "gc") && !value.is_boolean()) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, "=", value.dump(), " is not a boolean"));
    }
    TM_ASSIGN_OR_RETURN(std::string text, OptionText(key, value));
    absl::Status status = SetAllocatorOption(updated.allocator, spec_key, text);
    if (!status.ok() && !IsAllocatorOption(spec_key)) {
      // The allocator's list of keys lacks the plug-in's own two.
      return absl::InvalidArgumentError(
          absl::StrCat(status.message(),
                       " (the plug-in also takes trace_path, report_path)"));
    }
    TM_RETURN_IF_ERROR(status);
  }
  TM_RETURN_IF_ERROR(CheckKnown(updated.allocator, /*variables=*/false));
  TM_RETURN_IF_ERROR(CheckUsable(updated.allocator));
  *options = std::move(updated);
  return absl::OkStatus();
}

uint64_t ResolvedMemoryLimit(const PluginOptions& options) {
  if (options.allocator.memory_limit) return *options.allocator.memory_limit;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 16 * kGiB;  // unknown: a safe guess
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

}  // namespace tensormem
