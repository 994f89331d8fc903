// What both the allocator factory and ValidateAllocatorSpec derive from a
// specification, so that the check sees what the build would: the limit of
// each BFC allocator, its sub-allocator's parameters and its policy's
// environment.
//
//   const uint64_t limit = alloc_internal::BfcLimit(spec);
//   SubAllocatorParams params = alloc_internal::SubAllocatorParamsFor(spec,
//   limit);
#ifndef TENSORMEM_SRC_ALLOC_ALLOCATOR_SPEC_INTERNAL_H_
#define TENSORMEM_SRC_ALLOC_ALLOCATOR_SPEC_INTERNAL_H_

#include <algorithm>
#include <cstdint>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tensormem/alloc/allocation_policy.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/alloc/sub_allocator_registry.h"

namespace tensormem::alloc_internal {

// The limit of one BFC allocator: the whole limit (shards share it).
inline uint64_t BfcLimit(const AllocatorSpec& spec) {
  return spec.memory_limit.value_or(spec.capacity);
}

inline SubAllocatorParams SubAllocatorParamsFor(const AllocatorSpec& spec,
                                                uint64_t limit) {
  SubAllocatorParams params;
  params.capacity = std::max(spec.capacity, limit);
  params.device = spec.device;
  // Only the simulated kind has a choice; the others coalesce or not by
  // nature, and refuse a request they cannot honour.
  params.coalescing = spec.sub_allocator == "simulated" &&
                      spec.coalescing.value_or(spec.policy != "tf");
  return params;
}

inline PolicyEnvironment PolicyEnvironmentFor(const AllocatorSpec& spec,
                                              uint64_t limit,
                                              bool upstream_coalesces) {
  PolicyEnvironment environment;
  environment.memory_limit = limit;
  environment.allow_growth = spec.growth;
  environment.upstream_coalesces = upstream_coalesces;
  environment.fragmentation_fraction = spec.fragmentation_fraction;
  environment.granule = spec.granule;
  return environment;
}

// A policy's refusal, prefixed with the option to change: `config` when a
// known policy refuses its configuration, else `policy`.
inline absl::Status NamePolicyError(const AllocatorSpec& spec,
                                    const absl::Status& status) {
  const bool known = absl::c_any_of(Policies(), [&](const PolicyInfo& info) {
    return info.name == spec.policy;
  });
  return absl::Status(
      status.code(),
      absl::StrCat(known && !spec.config.empty() ? "config" : "policy", ": ",
                   status.message()));
}

}  // namespace tensormem::alloc_internal

#endif  // TENSORMEM_SRC_ALLOC_ALLOCATOR_SPEC_INTERNAL_H_
