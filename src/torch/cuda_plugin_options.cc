#include "torch/cuda_plugin_options.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tensormem/core/status_macros.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

absl::Status CheckKind(std::string_view where, const std::string& kind) {
  if (kind == "cuda" || kind == "cuda-vmm" || kind == "cuda-async") {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(where), "=", kind,
                   ": the CUDA plug-in uses cuda, cuda-vmm or cuda-async"));
}

absl::StatusOr<bool> ParseFlag(std::string_view where,
                               const std::string& text) {
  if (text == "1" || text == "true") return true;
  if (text == "0" || text == "false") return false;
  return absl::InvalidArgumentError(absl::StrCat(
      std::string(where), "=", text, ": expected 1, 0, true or false"));
}

absl::StatusOr<uint64_t> ParseLimit(std::string_view where,
                                    const std::string& text) {
  absl::StatusOr<uint64_t> bytes = ParseByteSize(text);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(where), "=", text, ": ", bytes.status().message()));
  }
  return *bytes;
}

}  // namespace

bool operator==(const CudaPluginOptions& a, const CudaPluginOptions& b) {
  return a.memory_limit == b.memory_limit &&
         a.sub_allocator == b.sub_allocator &&
         a.allow_growth == b.allow_growth &&
         a.garbage_collection == b.garbage_collection &&
         a.trace_path == b.trace_path && a.report_path == b.report_path;
}

absl::StatusOr<CudaPluginOptions> CudaPluginOptionsFromEnvironment(
    const std::function<const char*(const char*)>& getenv) {
  CudaPluginOptions options;
  auto read = [&](const char* name) -> std::string {
    const char* text = getenv(name);
    return text == nullptr ? "" : text;
  };
  if (std::string text = read("TENSORMEM_CUDA_SUB_ALLOCATOR"); !text.empty()) {
    TM_RETURN_IF_ERROR(CheckKind("TENSORMEM_CUDA_SUB_ALLOCATOR", text));
    options.sub_allocator = text;
  }
  if (std::string text = read("TENSORMEM_CUDA_MEMORY_LIMIT"); !text.empty()) {
    TM_ASSIGN_OR_RETURN(options.memory_limit,
                        ParseLimit("TENSORMEM_CUDA_MEMORY_LIMIT", text));
  }
  if (std::string text = read("TENSORMEM_GROWTH"); !text.empty()) {
    TM_ASSIGN_OR_RETURN(options.allow_growth,
                        ParseFlag("TENSORMEM_GROWTH", text));
  }
  if (std::string text = read("TENSORMEM_GC"); !text.empty()) {
    TM_ASSIGN_OR_RETURN(options.garbage_collection,
                        ParseFlag("TENSORMEM_GC", text));
  }
  options.trace_path = read("TENSORMEM_TRACE");
  options.report_path = read("TENSORMEM_REPORT");
  return options;
}

absl::Status ApplyCudaPluginOptionsJson(std::string_view json_text,
                                        CudaPluginOptions* options) {
  const nlohmann::json json = nlohmann::json::parse(json_text, nullptr, false);
  if (!json.is_object()) {
    return absl::InvalidArgumentError(
        "CUDA plug-in options: not a JSON object");
  }
  for (const auto& [key, value] : json.items()) {
    const std::string where = "option " + key;
    if (key == "memory_limit" && value.is_number_unsigned()) {
      options->memory_limit = value.get<uint64_t>();
    } else if (key == "memory_limit" && value.is_string()) {
      TM_ASSIGN_OR_RETURN(options->memory_limit,
                          ParseLimit(where, value.get<std::string>()));
    } else if (key == "sub_allocator" && value.is_string()) {
      TM_RETURN_IF_ERROR(CheckKind(where, value.get<std::string>()));
      options->sub_allocator = value.get<std::string>();
    } else if (key == "allow_growth" && value.is_boolean()) {
      options->allow_growth = value.get<bool>();
    } else if (key == "garbage_collection" && value.is_boolean()) {
      options->garbage_collection = value.get<bool>();
    } else if (key == "trace_path" && value.is_string()) {
      options->trace_path = value.get<std::string>();
    } else if (key == "report_path" && value.is_string()) {
      options->report_path = value.get<std::string>();
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "CUDA plug-in option '", key, "' = ", value.dump(),
          ": unknown key or wrong type (known: memory_limit, sub_allocator, "
          "allow_growth, garbage_collection, trace_path, report_path)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace tensormem
