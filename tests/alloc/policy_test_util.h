// Helpers shared by the allocation policy tests.
#ifndef TENSORMEM_TESTS_ALLOC_POLICY_TEST_UTIL_H_
#define TENSORMEM_TESTS_ALLOC_POLICY_TEST_UTIL_H_

#include <cctype>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/bfc_test_util.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/alloc/simulated_sub_allocator.h"

namespace tensormem::testing {

// A BFC allocator with policy `name` configured by `config` over a simulated
// upstream of `capacity` bytes (0: four times the limit). Fails the test (and
// returns nullptr) when the policy refuses the configuration.
inline std::unique_ptr<BfcAllocator> MakePolicyBfc(
    std::string_view name, std::string_view config, uint64_t limit,
    bool coalescing, bool growth = true, uint64_t capacity = 0) {
  auto upstream = std::make_unique<SimulatedSubAllocator>(
      capacity == 0 ? 4 * limit : capacity, coalescing);
  PolicyEnvironment environment;
  environment.memory_limit = limit;
  environment.allow_growth = growth;
  environment.upstream_coalesces = coalescing;
  absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy =
      CreatePolicy(name, environment, config);
  EXPECT_TRUE(policy.ok()) << policy.status();
  if (!policy.ok()) return nullptr;
  return std::make_unique<BfcAllocator>(
      std::move(upstream), limit, QuietOptions(growth), *std::move(policy));
}

// The pytorch policy configured by `config` (PYTORCH_CUDA_ALLOC_CONF syntax).
inline std::unique_ptr<BfcAllocator> Pytorch(std::string_view config = "",
                                             uint64_t limit = 1 * kGiB,
                                             bool coalescing = false) {
  return MakePolicyBfc("pytorch", config, limit, coalescing);
}

// RoundedSize of a pytorch policy configured by `config`.
inline uint64_t PytorchRounded(std::string_view config, uint64_t bytes) {
  absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy =
      CreatePolicy("pytorch", {.memory_limit = 16 * kGiB}, config);
  EXPECT_TRUE(policy.ok()) << policy.status();
  return policy.ok() ? (*policy)->RoundedSize(bytes).value_or(0) : 0;
}

// Region sizes in address order.
inline std::vector<uint64_t> RegionSizes(const BfcAllocator& allocator) {
  std::vector<uint64_t> sizes;
  for (const MemoryDump::Region& region : allocator.RecordMemoryDump().regions)
    sizes.push_back(region.size);
  return sizes;
}

// Chunk sizes of region `index`, in address order; in-use chunks positive,
// free ones as "free:" entries, e.g. {"1024", "free:2096128"}.
inline std::vector<std::string> ChunkLayout(const BfcAllocator& allocator,
                                            size_t index) {
  std::vector<std::string> layout;
  const MemoryDump dump = allocator.RecordMemoryDump();
  if (index >= dump.regions.size()) return {"<no region>"};
  for (const MemoryDump::Chunk& chunk : dump.regions[index].chunks) {
    layout.push_back((chunk.in_use ? "" : "free:") +
                     std::to_string(chunk.size));
  }
  return layout;
}

// A registered policy in one configuration ("" for its defaults).
struct PolicyChoice {
  std::string name;
  std::string config;

  // "tf", "pytorch[expandable_segments:True]".
  std::string Label() const {
    return config.empty() ? name : name + "[" + config + "]";
  }
  // Label() as a test name: "pytorch_expandable_segments_True_".
  std::string TestName() const {
    std::string test_name = Label();
    for (char& c : test_name) {
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    return test_name;
  }
  // Expandable segments grow one region in place: only over an upstream
  // whose regions extend earlier ones.
  bool NeedsCoalescing() const {
    return config.find("expandable_segments:True") != std::string::npos;
  }
};

// Every registered policy with its defaults and in each of its example
// configurations, so a new policy joins the sweeps by being registered.
inline std::vector<PolicyChoice> AllPolicyChoices() {
  std::vector<PolicyChoice> choices;
  for (const PolicyInfo& info : Policies()) {
    choices.push_back({std::string(info.name), ""});
    for (std::string_view config : info.example_configs)
      choices.push_back({std::string(info.name), std::string(config)});
  }
  return choices;
}

// A BFC allocator following `choice` over `upstream`. The default "tf" goes
// through the constructor without a policy (the engine's own TensorFlow
// rules), every other choice through the registry.
inline absl::StatusOr<std::unique_ptr<BfcAllocator>> MakeChoiceBfc(
    const PolicyChoice& choice, std::unique_ptr<SubAllocator> upstream,
    uint64_t limit, BfcAllocator::Options options) {
  if (choice.name == "tf" && choice.config.empty()) {
    return std::make_unique<BfcAllocator>(std::move(upstream), limit,
                                          std::move(options));
  }
  PolicyEnvironment environment;
  environment.memory_limit = limit;
  environment.allow_growth = options.allow_growth;
  environment.upstream_coalesces = upstream->SupportsCoalescing();
  environment.fragmentation_fraction = options.fragmentation_fraction;
  absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy =
      CreatePolicy(choice.name, environment, choice.config);
  if (!policy.ok()) return policy.status();
  return std::make_unique<BfcAllocator>(std::move(upstream), limit,
                                        std::move(options), *std::move(policy));
}

inline std::string Bytes(uint64_t bytes) { return std::to_string(bytes); }
inline std::string Free(uint64_t bytes) { return "free:" + Bytes(bytes); }

}  // namespace tensormem::testing

#endif  // TENSORMEM_TESTS_ALLOC_POLICY_TEST_UTIL_H_
