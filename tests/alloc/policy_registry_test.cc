// The policy registry: names, creation, and the configuration syntax shared by
// every policy.
#include "tensormem/alloc/policy_registry.h"

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

TEST(PolicyRegistryTest, DefaultComesFirstAndNamesAreUnique) {
  ASSERT_FALSE(Policies().empty());
  EXPECT_EQ(Policies().front().name, kDefaultPolicy);
  std::set<std::string> names;
  for (const PolicyInfo& info : Policies()) {
    EXPECT_TRUE(names.insert(std::string(info.name)).second) << info.name;
    EXPECT_FALSE(info.summary.empty()) << info.name;
  }
  EXPECT_TRUE(names.count("tf"));
  EXPECT_TRUE(names.count("pytorch"));
}

// The sweeps and the fuzzer run every example configuration: each must be
// one the policy accepts (over a coalescing upstream, for expandable
// segments), or they would test nothing.
TEST(PolicyRegistryTest, EveryExampleConfigurationIsAccepted) {
  for (const PolicyInfo& info : Policies()) {
    for (std::string_view config : info.example_configs) {
      absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy = CreatePolicy(
          info.name, {.memory_limit = kGiB, .upstream_coalesces = true},
          config);
      ASSERT_TRUE(policy.ok())
          << info.name << " " << config << ": " << policy.status();
      EXPECT_NE((*policy)->Describe(), std::string(info.name))
          << config << " changes nothing the policy describes";
    }
  }
}

TEST(PolicyRegistryTest, EveryPolicyIsCreatedAndKeepsTheRoundingContract) {
  for (const PolicyInfo& info : Policies()) {
    for (bool growth : {true, false}) {
      for (bool coalescing : {true, false}) {
        PolicyEnvironment environment;
        environment.memory_limit = kGiB;
        environment.allow_growth = growth;
        environment.upstream_coalesces = coalescing;
        absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy =
            CreatePolicy(info.name, environment);
        ASSERT_TRUE(policy.ok()) << info.name << ": " << policy.status();
        const AllocationPolicy& rules = **policy;
        EXPECT_THAT(rules.Describe(), HasSubstr(std::string(info.name)));
        ASSERT_GE(rules.NumPools(), 1);
        for (uint64_t bytes :
             {uint64_t{1}, uint64_t{255}, uint64_t{257}, uint64_t{1000},
              uint64_t{3} << 20, (uint64_t{1} << 40) + 1}) {
          const std::optional<uint64_t> rounded = rules.RoundedSize(bytes);
          ASSERT_TRUE(rounded.has_value()) << info.name << " " << bytes;
          EXPECT_GE(*rounded, bytes) << info.name;
          EXPECT_EQ(*rounded % 256, 0u) << info.name << " " << bytes;
          const int pool = rules.PoolFor(*rounded);
          EXPECT_GE(pool, 0);
          EXPECT_LT(pool, rules.NumPools());
        }
        EXPECT_FALSE(rules.RoundedSize(UINT64_MAX).has_value()) << info.name;
      }
    }
  }
}

// Growth and the limit have one home, the environment a policy is created
// for: an allocator whose options say otherwise reports it, for every policy.
TEST(PolicyRegistryTest, AllocatorOptionsThatContradictThePolicyAreMisuse) {
  constexpr uint64_t kLimit = 8 * kMiB;
  for (const PolicyInfo& info : Policies()) {
    for (const bool policy_grows : {true, false}) {
      for (const auto& [grows, limit] :
           {std::pair{policy_grows, kLimit}, std::pair{!policy_grows, kLimit},
            std::pair{policy_grows, 2 * kLimit}}) {
        absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy = CreatePolicy(
            info.name, {.memory_limit = kLimit, .allow_growth = policy_grows});
        ASSERT_TRUE(policy.ok()) << info.name << ": " << policy.status();
        std::vector<absl::Status> reported;
        BfcAllocator::Options options;
        options.allow_growth = grows;
        options.misuse_policy = MisusePolicy::kCallback;
        options.misuse_callback = [&](const absl::Status& status) {
          reported.push_back(status);
        };
        BfcAllocator bfc(std::make_unique<SimulatedSubAllocator>(4 * kLimit),
                         limit, options, *std::move(policy));
        const bool agrees = grows == policy_grows && limit == kLimit;
        ASSERT_EQ(reported.size(), agrees ? 0u : 1u)
            << info.name << " grows " << policy_grows;
        if (agrees) continue;
        EXPECT_EQ(reported[0].code(), absl::StatusCode::kFailedPrecondition);
        EXPECT_THAT(
            reported[0].message(),
            HasSubstr(grows != policy_grows ? "allow_growth" : "memory limit"));
        EXPECT_THAT(reported[0].message(), HasSubstr("AllocatorSpec"));
      }
    }
  }
}

TEST(PolicyRegistryTest, UnknownPolicyListsTheKnownOnes) {
  absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy =
      CreatePolicy("jemalloc", {.memory_limit = kGiB});
  ASSERT_FALSE(policy.ok());
  EXPECT_THAT(policy.status().message(), HasSubstr("'jemalloc'"));
  for (const PolicyInfo& info : Policies())
    EXPECT_THAT(policy.status().message(), HasSubstr(std::string(info.name)));
}

TEST(PolicyRegistryTest, PoliciesWithoutKeysRefuseAnyConfiguration) {
  for (const PolicyInfo& info : Policies()) {
    if (!info.config_keys.empty()) continue;
    absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy =
        CreatePolicy(info.name, {.memory_limit = kGiB}, "max_split_size_mb:64");
    ASSERT_FALSE(policy.ok()) << info.name;
    EXPECT_THAT(policy.status().message(), HasSubstr("max_split_size_mb"));
    EXPECT_THAT(policy.status().message(), HasSubstr("takes none"));
  }
}

TEST(PolicyRegistryTest, ParsesConfigurationText) {
  absl::StatusOr<std::vector<ConfigEntry>> entries = ParsePolicyConfig(
      " max_split_size_mb : 512 ,roundup_power2_divisions:[256:1,512:2,>:8],,"
      "expandable_segments:True");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].key, "max_split_size_mb");
  EXPECT_EQ((*entries)[0].value, "512");
  EXPECT_EQ((*entries)[1].key, "roundup_power2_divisions");
  EXPECT_EQ((*entries)[1].value, "[256:1,512:2,>:8]");
  EXPECT_EQ((*entries)[2].value, "True");
  EXPECT_TRUE(ParsePolicyConfig("")->empty());
  for (const char* bad : {"max_split_size_mb", ":5", "key:", "a:[1:2"}) {
    absl::StatusOr<std::vector<ConfigEntry>> parsed = ParsePolicyConfig(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr(bad));
    EXPECT_THAT(parsed.status().message(), HasSubstr("key:value"));
  }
}

// What the sub-allocator cannot do is known from its kind: the check refuses
// it before anything is built, naming the configuration key.
TEST(PolicyRegistryTest, ExpandableSegmentsNeedAContiguousSubAllocator) {
  AllocatorSpec spec;
  spec.policy = "pytorch";
  spec.config = "expandable_segments:True";
  for (const auto& [kind, coalescing] :
       std::vector<std::pair<std::string, std::optional<bool>>>{
           {"host", std::nullopt}, {"simulated", false}}) {
    spec.sub_allocator = kind;
    spec.coalescing = coalescing;
    const absl::Status status = ValidateAllocatorSpec(spec);
    ASSERT_FALSE(status.ok()) << kind;
    EXPECT_THAT(status.message(), HasSubstr("config: "));
    EXPECT_THAT(status.message(), HasSubstr("expandable_segments"));
    EXPECT_THAT(status.message(), HasSubstr("'" + kind + "'"));
    EXPECT_FALSE(CreateAllocator(spec).ok()) << kind;
  }
  for (const auto& [kind, coalescing] :
       std::vector<std::pair<std::string, std::optional<bool>>>{
           {"vmm", std::nullopt}, {"simulated", true}, {"simulated", {}}}) {
    spec.sub_allocator = kind;
    spec.coalescing = coalescing;
    spec.capacity = kGiB;
    EXPECT_TRUE(ValidateAllocatorSpec(spec).ok()) << kind;
    EXPECT_TRUE(CreateAllocator(spec).ok()) << kind;
  }
}

}  // namespace
}  // namespace tensormem
