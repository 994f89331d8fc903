// The policies the registry knows: one factory per file, one line each in
// policy_registry.cc.
#ifndef TENSORMEM_SRC_ALLOC_POLICIES_POLICIES_H_
#define TENSORMEM_SRC_ALLOC_POLICIES_POLICIES_H_

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/alloc/allocation_policy.h"
#include "tensormem/alloc/policy_registry.h"

namespace tensormem::internal {

using PolicyFactory = absl::StatusOr<std::unique_ptr<AllocationPolicy>> (*)(
    const PolicyEnvironment& environment,
    const std::vector<ConfigEntry>& config);

absl::StatusOr<std::unique_ptr<AllocationPolicy>> MakeTfPolicy(
    const PolicyEnvironment& environment,
    const std::vector<ConfigEntry>& config);
absl::StatusOr<std::unique_ptr<AllocationPolicy>> MakeTightPolicy(
    const PolicyEnvironment& environment,
    const std::vector<ConfigEntry>& config);
absl::StatusOr<std::unique_ptr<AllocationPolicy>> MakePlannedPolicy(
    const PolicyEnvironment& environment,
    const std::vector<ConfigEntry>& config);
absl::StatusOr<std::unique_ptr<AllocationPolicy>> MakePytorchPolicy(
    const PolicyEnvironment& environment,
    const std::vector<ConfigEntry>& config);

// The error for a key a policy does not know.
absl::Status UnknownConfigKey(std::string_view policy, std::string_view key,
                              std::string_view known_keys);

}  // namespace tensormem::internal

#endif  // TENSORMEM_SRC_ALLOC_POLICIES_POLICIES_H_
