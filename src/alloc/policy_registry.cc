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

using internal::RegisteredPolicy;

std::string_view Strip(std::string_view text) {
  const absl::string_view stripped =
      absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size()));
  return std::string_view(stripped.data(), stripped.size());
}

// Every built-in policy's entry, from its own file (policies/policies.h).
const NamedRegistry<RegisteredPolicy>& Registry() {
#define TENSORMEM_POLICY_ENTRY(Name) internal::Name##PolicyEntry(),
  static const auto* registry = new NamedRegistry<RegisteredPolicy>(
      {TENSORMEM_BUILT_IN_POLICIES(TENSORMEM_POLICY_ENTRY)},
      [](const RegisteredPolicy& policy) { return policy.info.name; });
#undef TENSORMEM_POLICY_ENTRY
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
  if (const RegisteredPolicy* registered = Registry().Find(name)) {
    absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy =
        registered->factory(environment, *entries);
    if (policy.ok()) (*policy)->set_created_for(environment);
    return policy;
  }
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
