// The allocator under test, decoded from the front of a fuzz input: upstream
// kind, faults, limit, options, policy. Shared by the allocator fuzz target
// and the fault sweep, so both build allocators the same way.
//
//   tensormem::fuzz::ByteReader input(data, size);
//   tensormem::fuzz::BfcSetup setup = tensormem::fuzz::DecodeBfcSetup(input);
//   std::unique_ptr<tensormem::BfcAllocator> bfc = MakeBfc(setup, false);
#ifndef TENSORMEM_FUZZ_ALLOCATOR_FUZZ_SETUP_H_
#define TENSORMEM_FUZZ_ALLOCATOR_FUZZ_SETUP_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "alloc/reference_free_index.h"
#include "byte_reader.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/fault_injecting_sub_allocator.h"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/alloc/sub_allocator_registry.h"

namespace tensormem::fuzz {

struct BfcPolicyChoice {
  std::string name;
  std::string config;  // PYTORCH_CUDA_ALLOC_CONF syntax, "" for the defaults
};

// Every registered allocation policy, with its defaults and in each of its
// example configurations: a new policy or configuration joins the driver by
// being registered. The reference index only knows TensorFlow's rules, so it
// checks "tf" alone.
inline std::vector<BfcPolicyChoice> BfcPolicyChoices() {
  std::vector<BfcPolicyChoice> choices;
  for (const PolicyInfo& info : Policies()) {
    choices.push_back({std::string(info.name), ""});
    for (std::string_view config : info.example_configs)
      choices.push_back({std::string(info.name), std::string(config)});
  }
  return choices;
}

struct BfcSetup {
  std::string upstream_kind;
  bool coalescing = false;
  std::string policy;
  std::string policy_config;
  uint64_t limit = 0;
  BfcAllocator::Options options;
  std::vector<int64_t> failing_calls;
  size_t shortfall = 0;
  bool timestamps = false;
  bool reference_oracle = false;
  int max_size_log2 = 20;
};

inline double DecodeFraction(ByteReader& input) {
  switch (input.Byte() % 8) {
    case 0:
      return std::numeric_limits<double>::quiet_NaN();
    case 1:
      return -1;
    case 2:
      return 2;
    case 3:
      return 1e300;
    case 4:
      return 0.001;
    case 5:
      return 0.5;
    default:
      return 0;
  }
}

inline BfcSetup DecodeBfcSetup(ByteReader& input) {
  BfcSetup setup;
  const std::vector<SubAllocatorInfo> kinds = SubAllocatorKinds();
  setup.upstream_kind = std::string(kinds[input.Below(kinds.size())].name);
  // Host regions are real memory: keep them small.
  const bool host = setup.upstream_kind == "host";
  setup.coalescing = !host && input.Bool();
  static const std::vector<BfcPolicyChoice>* const policies =
      new std::vector<BfcPolicyChoice>(BfcPolicyChoices());
  const BfcPolicyChoice& policy = (*policies)[input.Below(policies->size())];
  setup.policy = policy.name;
  setup.policy_config = policy.config;
  setup.limit = input.Size(host ? 24 : 32);
  // The hostile sizes (2^63, 2^64 - k) stay for address-space upstreams; on
  // host memory a backpedalling region size would find all of the machine's.
  if (host) setup.limit = std::min<uint64_t>(setup.limit, uint64_t{1} << 24);
  setup.max_size_log2 = host ? 20 : 30;
  const uint8_t flags = input.Byte();
  setup.options.allow_growth = (flags & 1) != 0;
  setup.options.garbage_collection = (flags & 2) != 0;
  setup.timestamps = (flags & 4) != 0;
  // Offsets are comparable only where placement is deterministic.
  setup.reference_oracle = setup.policy == "tf" &&
                           setup.policy_config.empty() && (flags & 8) != 0 &&
                           setup.upstream_kind == "simulated";
  if ((flags & 16) != 0)
    setup.options.fragmentation_fraction = DecodeFraction(input);
  if ((flags & 32) != 0) {
    for (int i = input.Byte() % 4; i > 0; --i)
      setup.failing_calls.push_back(1 + input.Byte() % 16);
  }
  if ((flags & 64) != 0) setup.shortfall = input.Size(12);
  setup.options.allow_retry_on_failure = false;
  setup.options.log_failures = false;
  setup.options.misuse_policy = MisusePolicy::kCallback;
  setup.options.misuse_callback = [](const absl::Status&) {};
  return setup;
}

// nullptr when the upstream cannot be made (e.g. a device kind on a machine
// without the device).
inline std::unique_ptr<BfcAllocator> MakeBfc(const BfcSetup& setup,
                                             bool reference) {
  const uint64_t capacity = setup.limit > (uint64_t{1} << 40)
                                ? uint64_t{1} << 41
                                : 2 * setup.limit + (64 << 20);
  // Kinds that always (or never) coalesce refuse the other setting.
  absl::StatusOr<std::unique_ptr<SubAllocator>> upstream = CreateSubAllocator(
      setup.upstream_kind,
      {.capacity = capacity, .coalescing = setup.coalescing});
  if (!upstream.ok()) {
    upstream = CreateSubAllocator(
        setup.upstream_kind,
        {.capacity = capacity, .coalescing = !setup.coalescing});
  }
  if (!upstream.ok()) return nullptr;
  auto faulty =
      std::make_unique<FaultInjectingSubAllocator>(std::move(*upstream));
  for (int64_t call : setup.failing_calls) faulty->FailAllocCall(call);
  faulty->SetShortfall(setup.shortfall);
  if (setup.policy != "tf" || !setup.policy_config.empty()) {
    PolicyEnvironment environment;
    environment.memory_limit = setup.limit;
    environment.allow_growth = setup.options.allow_growth;
    environment.upstream_coalesces = faulty->SupportsCoalescing();
    environment.fragmentation_fraction = setup.options.fragmentation_fraction;
    absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy =
        CreatePolicy(setup.policy, environment, setup.policy_config);
    if (!policy.ok()) return nullptr;
    return std::make_unique<BfcAllocator>(std::move(faulty), setup.limit,
                                          setup.options, *std::move(policy));
  }
  std::unique_ptr<BfcFreeIndex> index =
      reference ? std::unique_ptr<BfcFreeIndex>(
                      std::make_unique<ReferenceFreeIndex>())
                : MakeFastFreeIndex();
  return std::make_unique<BfcAllocator>(std::move(faulty), setup.limit,
                                        setup.options, std::move(index));
}

}  // namespace tensormem::fuzz

#endif  // TENSORMEM_FUZZ_ALLOCATOR_FUZZ_SETUP_H_
