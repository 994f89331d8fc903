// CreateAllocator: an allocator from its specification.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "alloc/allocator_spec_internal.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/alloc/budgeted_sub_allocator.h"
#include "tensormem/alloc/limiting_allocator.h"
#include "tensormem/alloc/planned_allocator.h"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/alloc/sharded_allocator.h"
#include "tensormem/alloc/sub_allocator_registry.h"
#include "tensormem/alloc/system_allocator.h"
#include "tensormem/core/status_macros.h"

namespace tensormem {
namespace {

// Errors of a part, prefixed with the option that chose it.
absl::Status Named(std::string_view key, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(std::string(key), ": ", status.message()));
}

absl::StatusOr<BuiltAllocator> CreateBfcOver(
    const AllocatorSpec& spec, uint64_t limit, BfcAllocatorOptions options,
    std::unique_ptr<SubAllocator> upstream) {
  const PolicyEnvironment environment = alloc_internal::PolicyEnvironmentFor(
      spec, limit, upstream->SupportsCoalescing());
  absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy =
      CreatePolicy(spec.policy, environment, spec.config);
  if (!policy.ok())
    return alloc_internal::NamePolicyError(spec, policy.status());

  options.allow_growth = spec.growth;
  options.garbage_collection = spec.garbage_collection;
  options.fragmentation_fraction = spec.fragmentation_fraction;
  auto bfc = std::make_unique<BfcAllocator>(
      std::move(upstream), limit, std::move(options), *std::move(policy));
  BuiltAllocator built;
  built.bfc = bfc.get();
  built.allocator = std::move(bfc);
  return built;
}

// The sub-allocator the specification names, drawing on `budget` if any.
absl::StatusOr<std::unique_ptr<SubAllocator>> CreateUpstream(
    const AllocatorSpec& spec, uint64_t limit,
    const std::shared_ptr<MemoryBudget>& budget) {
  absl::StatusOr<std::unique_ptr<SubAllocator>> upstream = CreateSubAllocator(
      spec.sub_allocator, alloc_internal::SubAllocatorParamsFor(spec, limit));
  if (!upstream.ok()) return Named("sub_allocator", upstream.status());
  if (budget == nullptr) return upstream;
  return std::make_unique<BudgetedSubAllocator>(*std::move(upstream), budget);
}

// What the configured policy asks of the allocator's construction, asked of
// one probe policy (none when it cannot be built: CreateBfcOver says why).
struct PolicyNeeds {
  bool thread_pools = false;  // it allows pools of their own for threads
  AllocationPolicy::LoopPlanning planning =
      AllocationPolicy::LoopPlanning::kNone;
};

PolicyNeeds NeedsOf(const AllocatorSpec& spec, uint64_t limit) {
  absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy = CreatePolicy(
      spec.policy, alloc_internal::PolicyEnvironmentFor(spec, limit, true),
      spec.config);
  if (!policy.ok()) return {};
  return {.thread_pools = (*policy)->AllowsThreadPools(),
          .planning = (*policy)->PlansLoops()};
}

// Whether threads past the first get pools of their own (the policy allows
// it and each pool can reserve a fixed range).
bool WantsThreadPools(const AllocatorSpec& spec, const PolicyNeeds& needs) {
  return needs.thread_pools && spec.thread_pools >= 2 && spec.shards <= 1 &&
         (spec.sub_allocator == "simulated" || spec.sub_allocator == "vmm");
}

// A policy that plans loops: the BFC allocator becomes the fallback of a
// PlannedAllocator. `built.bfc` stays the BFC allocator (dumps, failure
// reports); `built.allocator` is the planned one.
BuiltAllocator WrapIfPlanned(const AllocatorSpec& spec,
                             const PolicyNeeds& needs, BuiltAllocator built) {
  using LoopPlanning = AllocationPolicy::LoopPlanning;
  if (needs.planning == LoopPlanning::kNone) return built;
  built.allocator.release();  // owned by the planned allocator from here
  built.allocator = std::make_unique<PlannedAllocator>(
      std::unique_ptr<BfcAllocator>(built.bfc),
      PlannedAllocatorOptions{
          .background_planning = needs.planning == LoopPlanning::kBackground,
          .growth_allowance = spec.granule});
  return built;
}

absl::StatusOr<BuiltAllocator> CreateBfc(const AllocatorSpec& spec,
                                         uint64_t limit,
                                         BfcAllocatorOptions options) {
  const PolicyNeeds needs = NeedsOf(spec, limit);
  if (!WantsThreadPools(spec, needs)) {
    TM_ASSIGN_OR_RETURN(std::unique_ptr<SubAllocator> upstream,
                        CreateUpstream(spec, limit, nullptr));
    TM_ASSIGN_OR_RETURN(
        BuiltAllocator built,
        CreateBfcOver(spec, limit, std::move(options), std::move(upstream)));
    return WrapIfPlanned(spec, needs, std::move(built));
  }
  // The pools share the limit: every upstream draws on one budget.
  auto budget = std::make_shared<MemoryBudget>(limit);
  TM_ASSIGN_OR_RETURN(std::unique_ptr<SubAllocator> upstream,
                      CreateUpstream(spec, limit, budget));
  BfcAllocatorOptions pool_options = options;
  pool_options.allow_retry_on_failure = false;
  pool_options.log_failures = false;
  pool_options.name = options.name + "/thread";
  TM_ASSIGN_OR_RETURN(
      BuiltAllocator built,
      CreateBfcOver(spec, limit, std::move(options), std::move(upstream)));
  built.bfc->EnableThreadPools(
      spec.thread_pools,
      [spec, limit, pool_options, budget]() -> std::unique_ptr<BfcAllocator> {
        absl::StatusOr<std::unique_ptr<SubAllocator>> pool_upstream =
            CreateUpstream(spec, limit, budget);
        if (!pool_upstream.ok()) return nullptr;
        absl::StatusOr<BuiltAllocator> pool =
            CreateBfcOver(spec, limit, pool_options, *std::move(pool_upstream));
        if (!pool.ok()) return nullptr;
        pool->allocator.release();  // owned as `pool->bfc` from here
        return std::unique_ptr<BfcAllocator>(pool->bfc);
      });
  return WrapIfPlanned(spec, needs, std::move(built));
}

// `spec.shards` BFC allocators sharing the limit: each may grow to all of it,
// and their upstreams draw on one budget.
absl::StatusOr<BuiltAllocator> CreateSharded(
    const AllocatorSpec& spec, const BfcAllocatorOptions& options) {
  const uint64_t limit = alloc_internal::BfcLimit(spec);
  auto budget = std::make_shared<MemoryBudget>(limit);
  std::vector<std::unique_ptr<BfcAllocator>> shards;
  for (int i = 0; i < spec.shards; ++i) {
    TM_ASSIGN_OR_RETURN(std::unique_ptr<SubAllocator> upstream,
                        CreateUpstream(spec, limit, budget));
    TM_ASSIGN_OR_RETURN(
        BuiltAllocator shard,
        CreateBfcOver(spec, limit, options, std::move(upstream)));
    shard.allocator.release();  // owned as `shard.bfc` from here
    shards.emplace_back(shard.bfc);
  }
  TM_ASSIGN_OR_RETURN(std::unique_ptr<ShardedAllocator> sharded,
                      ShardedAllocator::Create(std::move(shards), limit));
  sharded->SetMisusePolicy(options.misuse_policy, options.misuse_callback);
  BuiltAllocator built;
  built.allocator = std::move(sharded);
  return built;
}

}  // namespace

absl::StatusOr<BuiltAllocator> CreateAllocator(const AllocatorSpec& spec,
                                               BfcAllocatorOptions options) {
  TM_RETURN_IF_ERROR(ValidateAllocatorSpec(spec));
  const uint64_t limit = spec.memory_limit.value_or(spec.capacity);
  if (spec.kind == "bfc" && spec.shards > 1)
    return CreateSharded(spec, options);
  if (spec.kind == "bfc") return CreateBfc(spec, limit, std::move(options));
  BuiltAllocator built;
  auto system = std::make_unique<SystemAllocator>();
  if (!spec.memory_limit) {
    built.allocator = std::move(system);
    return built;
  }
  built.allocator = std::make_unique<LimitingAllocator>(*system, limit);
  built.wrapped.push_back(std::move(system));
  return built;
}

absl::StatusOr<BuiltAllocator> CreateAllocatorOver(
    const AllocatorSpec& spec, std::unique_ptr<SubAllocator> upstream,
    BfcAllocatorOptions options) {
  TM_RETURN_IF_ERROR(ValidateAllocatorSpec(spec));
  if (spec.kind != "bfc" || spec.shards > 1) {
    return absl::InvalidArgumentError(
        "an allocator over a given upstream is one BFC allocator (kind bfc, "
        "one shard)");
  }
  const uint64_t limit = spec.memory_limit.value_or(spec.capacity);
  TM_ASSIGN_OR_RETURN(
      BuiltAllocator built,
      CreateBfcOver(spec, limit, std::move(options), std::move(upstream)));
  return WrapIfPlanned(spec, NeedsOf(spec, limit), std::move(built));
}

}  // namespace tensormem
