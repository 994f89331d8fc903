#include "torch/plugin_options.h"

#include <unistd.h>

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

// This Abseil's string_view is not std::string_view.
absl::string_view ToAbsl(std::string_view text) {
  return absl::string_view(text.data(), text.size());
}

absl::StatusOr<bool> ParseFlag(std::string_view name, std::string_view text) {
  const std::string lower = absl::AsciiStrToLower(ToAbsl(text));
  if (lower == "1" || lower == "true" || lower == "yes" || lower == "on")
    return true;
  if (lower == "0" || lower == "false" || lower == "no" || lower == "off")
    return false;
  return absl::InvalidArgumentError(absl::StrCat(
      ToAbsl(name), "='", ToAbsl(text),
      "' is not a boolean (use 1/0, true/false, yes/no or on/off)"));
}

absl::Status CheckSubAllocatorKind(std::string_view name,
                                   std::string_view kind) {
  if (kind == "host" || kind == "vmm") return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      ToAbsl(name), "='", ToAbsl(kind),
      "' is not a sub-allocator the plug-in can use (host or vmm)"));
}

absl::StatusOr<uint64_t> ParseLimit(std::string_view name,
                                    std::string_view text) {
  absl::StatusOr<uint64_t> bytes = ParseByteSize(text);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ToAbsl(name), ": ", bytes.status().message()));
  }
  return *bytes;
}

}  // namespace

absl::StatusOr<PluginOptions> OptionsFromEnvironment(
    const std::function<const char*(const char*)>& getenv) {
  PluginOptions options;
  if (const char* text = getenv("TENSORMEM_MEMORY_LIMIT"); text && *text) {
    absl::StatusOr<uint64_t> limit = ParseLimit("TENSORMEM_MEMORY_LIMIT", text);
    if (!limit.ok()) return limit.status();
    options.memory_limit = *limit;
  }
  if (const char* text = getenv("TENSORMEM_SUB_ALLOCATOR"); text && *text) {
    absl::Status status =
        CheckSubAllocatorKind("TENSORMEM_SUB_ALLOCATOR", text);
    if (!status.ok()) return status;
    options.sub_allocator = text;
  }
  if (const char* text = getenv("TENSORMEM_GROWTH"); text && *text) {
    absl::StatusOr<bool> flag = ParseFlag("TENSORMEM_GROWTH", text);
    if (!flag.ok()) return flag.status();
    options.allow_growth = *flag;
  }
  if (const char* text = getenv("TENSORMEM_GC"); text && *text) {
    absl::StatusOr<bool> flag = ParseFlag("TENSORMEM_GC", text);
    if (!flag.ok()) return flag.status();
    options.garbage_collection = *flag;
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
    if (key == "memory_limit") {
      if (value.is_number_unsigned()) {
        options->memory_limit = value.get<uint64_t>();
      } else if (value.is_string()) {
        absl::StatusOr<uint64_t> limit =
            ParseLimit("memory_limit", value.get<std::string>());
        if (!limit.ok()) return limit.status();
        options->memory_limit = *limit;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("memory_limit=", value.dump(),
                         " is neither bytes nor a size text"));
      }
    } else if (key == "allow_growth" || key == "garbage_collection") {
      if (!value.is_boolean()) {
        return absl::InvalidArgumentError(
            absl::StrCat(key, "=", value.dump(), " is not a boolean"));
      }
      (key == "allow_growth" ? options->allow_growth
                             : options->garbage_collection) = value.get<bool>();
    } else if (key == "sub_allocator" || key == "trace_path" ||
               key == "report_path") {
      if (!value.is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat(key, "=", value.dump(), " is not a string"));
      }
      const std::string text = value.get<std::string>();
      if (key == "sub_allocator") {
        absl::Status status = CheckSubAllocatorKind(key, text);
        if (!status.ok()) return status;
        options->sub_allocator = text;
      } else {
        (key == "trace_path" ? options->trace_path : options->report_path) =
            text;
      }
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option '", key,
                       "' (known: memory_limit, sub_allocator, allow_growth, "
                       "garbage_collection, "
                       "trace_path, report_path)"));
    }
  }
  return absl::OkStatus();
}

uint64_t ResolvedMemoryLimit(const PluginOptions& options) {
  if (options.memory_limit != 0) return options.memory_limit;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 16 * kGiB;  // unknown: a safe guess
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

}  // namespace tensormem
