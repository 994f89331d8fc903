#include "tensormem/alloc/policy_registry.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "alloc/policies/policies.h"
#include "tensormem/core/named_registry.h"

namespace tensormem {
namespace {

struct RegisteredPolicy {
  PolicyInfo info;
  internal::PolicyFactory factory;
};

std::string_view Strip(std::string_view text) {
  const absl::string_view stripped =
      absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size()));
  return std::string_view(stripped.data(), stripped.size());
}

// One line per policy; the first is the default (kDefaultPolicy).
const NamedRegistry<RegisteredPolicy>& Registry() {
  static const auto* registry = new NamedRegistry<RegisteredPolicy>(
      {
          {{"tight",
            "best fit, always split, grow by what is lacking (tensormem's own)",
            "decommit (hold_peak: give free granules back before growing past "
            "the high-water mark; on_pressure: only when memory is short; "
            "unset: on_pressure where a decommit drains a GPU)",
            {"decommit:on_pressure"}},
           internal::MakeTightPolicy},
          {{"tf", "TensorFlow's BFC allocator, decision for decision", ""},
           internal::MakeTfPolicy},
          {{"pytorch",
            "a model of PyTorch's CUDA caching allocator",
            "max_split_size_mb, max_non_split_rounding_mb, "
            "roundup_power2_divisions, garbage_collection_threshold, "
            "expandable_segments",
            {"expandable_segments:True", "max_split_size_mb:21",
             "roundup_power2_divisions:4", "garbage_collection_threshold:0.5",
             "max_non_split_rounding_mb:4,"
             "roundup_power2_divisions:[1:1,64:8,>:2]"}},
           internal::MakePytorchPolicy},
          {{"planned",
            "learns a repeating loop and serves it from an offline plan; tight "
            "for the rest (planned_allocator.h)",
            "planning (background: on a thread of its own; inline: when due, "
            "on the allocating thread, the same in every run), decommit (as "
            "tight's)",
            {"planning:inline", "decommit:on_pressure"}},
           internal::MakePlannedPolicy},
      },
      [](const RegisteredPolicy& policy) { return policy.info.name; });
  return *registry;
}

}  // namespace

const std::vector<PolicyInfo>& Policies() {
  static const auto* infos = [] {
    auto* list = new std::vector<PolicyInfo>;
    for (const RegisteredPolicy* policy : Registry().List())
      list->push_back(policy->info);
    return list;
  }();
  return *infos;
}

absl::StatusOr<std::unique_ptr<AllocationPolicy>> CreatePolicy(
    std::string_view name, const PolicyEnvironment& environment,
    std::string_view config) {
  absl::StatusOr<std::vector<ConfigEntry>> entries = ParsePolicyConfig(config);
  if (!entries.ok()) return entries.status();
  if (const RegisteredPolicy* policy = Registry().Find(name))
    return policy->factory(environment, *entries);
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown policy '%s' (known: %s)", std::string(name),
                      absl::StrJoin(Registry().Names(), ", ")));
}

absl::StatusOr<std::vector<std::string>> SplitOutsideBrackets(
    std::string_view text) {
  std::vector<std::string> pieces;
  int depth = 0;
  size_t begin = 0;
  for (size_t end = 0; end <= text.size(); ++end) {
    const char c = end < text.size() ? text[end] : ',';
    if (c == '[') ++depth;
    if (c == ']' && --depth < 0) break;
    if (c != ',' || depth != 0) continue;
    const std::string_view piece = Strip(text.substr(begin, end - begin));
    if (!piece.empty()) pieces.emplace_back(piece);
    begin = end + 1;
  }
  if (depth != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("unbalanced brackets in '%s'", std::string(text)));
  }
  return pieces;
}

absl::StatusOr<std::vector<ConfigEntry>> ParsePolicyConfig(
    std::string_view text) {
  absl::StatusOr<std::vector<std::string>> pieces = SplitOutsideBrackets(text);
  if (!pieces.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("configuration: ", pieces.status().message(),
                     " (entries are key:value, separated by commas)"));
  }
  std::vector<ConfigEntry> entries;
  for (const std::string& piece : *pieces) {
    const std::string_view entry = piece;
    const size_t colon = entry.find(':');
    if (colon == std::string_view::npos || colon == 0 ||
        colon + 1 == entry.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "configuration entry '%s' is not of the form key:value", piece));
    }
    entries.push_back({std::string(Strip(entry.substr(0, colon))),
                       std::string(Strip(entry.substr(colon + 1)))});
  }
  return entries;
}

namespace internal {

absl::Status UnknownConfigKey(std::string_view policy, std::string_view key,
                              std::string_view known_keys) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "policy '%s' has no configuration key '%s' (%s)", std::string(policy),
      std::string(key),
      known_keys.empty() ? std::string("it takes none")
                         : absl::StrCat("known: ", std::string(known_keys))));
}

}  // namespace internal
}  // namespace tensormem
