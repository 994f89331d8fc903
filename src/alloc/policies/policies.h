// The policies the registry knows. Each file under src/alloc/policies/ defines
// one or more entries, `RegisteredPolicy NamePolicyEntry()`: what `--help`
// shows and the factory. Adding a policy is its file plus its name in
// TENSORMEM_BUILT_IN_POLICIES (CMake picks up every file of the folder).
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

struct RegisteredPolicy {
  PolicyInfo info;
  PolicyFactory factory;
};

// The built-in policies, in the order to show them: the default first
// (kDefaultPolicy). One X(Name) per `NamePolicyEntry()`.
#define TENSORMEM_BUILT_IN_POLICIES(X) X(Tight) X(Tf) X(Pytorch) X(Planned)

#define TENSORMEM_DECLARE_POLICY_ENTRY(Name) \
  RegisteredPolicy Name##PolicyEntry();
TENSORMEM_BUILT_IN_POLICIES(TENSORMEM_DECLARE_POLICY_ENTRY)
#undef TENSORMEM_DECLARE_POLICY_ENTRY

// The error for a key a policy does not know.
absl::Status UnknownConfigKey(std::string_view policy, std::string_view key,
                              std::string_view known_keys);

}  // namespace tensormem::internal

#endif  // TENSORMEM_SRC_ALLOC_POLICIES_POLICIES_H_
