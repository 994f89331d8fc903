// Creating an allocation policy from its name and a configuration text.
//
// The configuration uses PyTorch's PYTORCH_CUDA_ALLOC_CONF syntax for every
// policy: comma-separated `key:value` pairs, a value may be a bracketed list
// (`roundup_power2_divisions:[256:1,512:2,>:8]`). Unknown keys and bad values
// are errors that name the key and what it accepts.
//
//   for (const PolicyInfo& info : Policies()) std::cout << info.name << "\n";
//   absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy = CreatePolicy(
//       "pytorch", {.memory_limit = 16 * kGiB, .upstream_coalesces = true},
//       "expandable_segments:True");
#ifndef TENSORMEM_ALLOC_POLICY_REGISTRY_H_
#define TENSORMEM_ALLOC_POLICY_REGISTRY_H_

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/alloc/allocation_policy.h"

namespace tensormem {

struct PolicyInfo {
  std::string_view name;
  std::string_view summary;      // one line, for --help
  std::string_view config_keys;  // accepted keys, for --help and errors
  // Configurations that exercise the keys, besides the default "": the fault
  // and misuse sweeps and the allocator fuzz target run every policy in each.
  std::vector<std::string_view> example_configs = {};
};

// Every policy, in the order to show them (the default first).
const std::vector<PolicyInfo>& Policies();

// The policy `replay`, `bench` and the PyTorch plug-in use unless told.
inline constexpr std::string_view kDefaultPolicy = "tight";

// Errors: an unknown name (listing the known ones) or a bad configuration.
absl::StatusOr<std::unique_ptr<AllocationPolicy>> CreatePolicy(
    std::string_view name, const PolicyEnvironment& environment,
    std::string_view config = "");

// One `key:value` pair of a configuration text.
struct ConfigEntry {
  std::string key;
  std::string value;
};
// Splits a configuration text into its pairs (commas inside brackets belong to
// the value). Errors name the malformed entry.
absl::StatusOr<std::vector<ConfigEntry>> ParsePolicyConfig(
    std::string_view text);
// `text` cut at the commas outside square brackets, each piece stripped of
// spaces, empty pieces dropped: "a:1, b:[2,3]" -> {"a:1", "b:[2,3]"}.
// Errors: unbalanced brackets.
absl::StatusOr<std::vector<std::string>> SplitOutsideBrackets(
    std::string_view text);

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_POLICY_REGISTRY_H_
