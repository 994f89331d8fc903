// The allocator specification: every option from text, the environment,
// validation, descriptions, and what CreateAllocator builds (the tf policy
// places blocks exactly where a default BfcAllocator does).
#include "tensormem/alloc/allocator_spec.h"

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "alloc/bfc_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;
using testing::InvariantsHold;
using testing::QuietOptions;

// One good and one bad value per option, and what the good one must set.
struct OptionCase {
  std::string good;
  std::function<bool(const AllocatorSpec&)> applied;
  std::string bad;  // empty: the option takes any text (checked at creation)
};

const std::map<std::string, OptionCase>& OptionCases() {
  static const auto* cases = new std::map<std::string, OptionCase>{
      {"allocator",
       {"system", [](const AllocatorSpec& s) { return s.kind == "system"; },
        ""}},
      {"policy",
       {"pytorch", [](const AllocatorSpec& s) { return s.policy == "pytorch"; },
        ""}},
      {"config",
       {"max_split_size_mb:64",
        [](const AllocatorSpec& s) {
          return s.config == "max_split_size_mb:64";
        },
        ""}},
      {"sub_allocator",
       {"vmm", [](const AllocatorSpec& s) { return s.sub_allocator == "vmm"; },
        ""}},
      {"memory_limit",
       {"16G",
        [](const AllocatorSpec& s) { return s.memory_limit == 16 * kGiB; },
        "lots"}},
      {"capacity",
       {"2T", [](const AllocatorSpec& s) { return s.capacity == 2 * kTiB; },
        "0"}},
      {"growth",
       {"off", [](const AllocatorSpec& s) { return !s.growth; }, "maybe"}},
      {"gc",
       {"yes", [](const AllocatorSpec& s) { return s.garbage_collection; },
        "2"}},
      {"fragmentation_fraction",
       {"0.25",
        [](const AllocatorSpec& s) { return s.fragmentation_fraction == 0.25; },
        "1.5"}},
      {"coalescing",
       {"false", [](const AllocatorSpec& s) { return s.coalescing == false; },
        "sometimes"}},
      {"granule",
       {"64M", [](const AllocatorSpec& s) { return s.granule == 64 * kMiB; },
        "-2M"}},
      {"device",
       {"3", [](const AllocatorSpec& s) { return s.device == 3; }, "-1"}},
      {"shards",
       {"4", [](const AllocatorSpec& s) { return s.shards == 4; }, "0"}},
      {"thread_pools",
       {"1", [](const AllocatorSpec& s) { return s.thread_pools == 1; }, "17"}},
  };
  return *cases;
}

TEST(AllocatorSpecTest, EveryOptionIsSetFromTextAndBadValuesNameTheKey) {
  std::set<std::string> keys;
  for (const AllocatorOptionInfo& option : AllocatorOptions()) {
    const std::string key(option.key);
    keys.insert(key);
    const auto it = OptionCases().find(key);
    ASSERT_NE(it, OptionCases().end()) << "no test values for option " << key;
    EXPECT_FALSE(option.accepted.empty()) << key;
    EXPECT_FALSE(option.help.empty()) << key;
    AllocatorSpec spec;
    ASSERT_TRUE(SetAllocatorOption(spec, key, it->second.good).ok()) << key;
    EXPECT_TRUE(it->second.applied(spec)) << key;
    if (it->second.bad.empty()) continue;
    AllocatorSpec untouched;
    const absl::Status bad = SetAllocatorOption(untouched, key, it->second.bad);
    ASSERT_FALSE(bad.ok()) << key << " accepted " << it->second.bad;
    EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(bad.message(), HasSubstr(key));
    EXPECT_THAT(bad.message(), HasSubstr(it->second.bad));
    EXPECT_THAT(bad.message(), HasSubstr(std::string(option.accepted)));
    EXPECT_EQ(untouched, AllocatorSpec{}) << key << ": a bad value changed it";
  }
  EXPECT_EQ(keys.size(), OptionCases().size()) << "test values of a removed "
                                                  "option";
}

TEST(AllocatorSpecTest, UnknownOptionListsTheKnownOnes) {
  AllocatorSpec spec;
  const absl::Status status = SetAllocatorOption(spec, "max_split", "1");
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("'max_split'"));
  EXPECT_THAT(status.message(), HasSubstr("memory_limit"));
  EXPECT_THAT(status.message(), HasSubstr("sub_allocator"));
}

TEST(AllocatorSpecTest, EnvironmentVariablesSetOptionsAndEmptyOnesAreIgnored) {
  const std::map<std::string, std::string> environment = {
      {"TENSORMEM_POLICY", "pytorch"},
      {"TENSORMEM_CONFIG", "expandable_segments:True"},
      {"TENSORMEM_MEMORY_LIMIT", "8G"},
      {"TENSORMEM_GROWTH", "0"},
      {"TENSORMEM_SUB_ALLOCATOR", ""},  // empty: left as is
      {"TENSORMEM_UNRELATED", "x"},
  };
  const auto getenv = [&](const char* name) -> const char* {
    const auto it = environment.find(name);
    return it == environment.end() ? nullptr : it->second.c_str();
  };
  AllocatorSpec spec;
  ASSERT_TRUE(ApplyAllocatorEnvironment(spec, getenv).ok());
  EXPECT_EQ(spec.policy, "pytorch");
  EXPECT_EQ(spec.config, "expandable_segments:True");
  EXPECT_EQ(spec.memory_limit, 8 * kGiB);
  EXPECT_FALSE(spec.growth);
  EXPECT_EQ(spec.sub_allocator, "simulated");

  AllocatorSpec untouched;
  ASSERT_TRUE(ApplyAllocatorEnvironment(untouched, [](const char*) {
                return static_cast<const char*>(nullptr);
              }).ok());
  EXPECT_EQ(untouched, AllocatorSpec{});
}

TEST(AllocatorSpecTest, BadEnvironmentValueNamesTheVariable) {
  AllocatorSpec spec;
  const absl::Status status =
      ApplyAllocatorEnvironment(spec, [](const char* name) -> const char* {
        return std::string(name) == "TENSORMEM_GC" ? "perhaps" : nullptr;
      });
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("TENSORMEM_GC"));
  EXPECT_THAT(status.message(), HasSubstr("perhaps"));
}

TEST(AllocatorSpecTest, ValidationRefusesImpossibleCombinations) {
  EXPECT_TRUE(ValidateAllocatorSpec({}).ok());
  struct Bad {
    std::function<void(AllocatorSpec&)> change;
    const char* message;
  };
  const Bad cases[] = {
      {[](AllocatorSpec& s) { s.kind = "slab"; }, "unknown allocator 'slab'"},
      {[](AllocatorSpec& s) { s.memory_limit = 0; }, "memory limit 0"},
      {[](AllocatorSpec& s) { s.kind = "system", s.policy = "tf"; },
       "bfc only"},
      {[](AllocatorSpec& s) { s.kind = "system", s.growth = false; },
       "bfc only"},
      {[](AllocatorSpec& s) { s.kind = "system", s.coalescing = true; },
       "bfc only"},
      {[](AllocatorSpec& s) { s.fragmentation_fraction = 0.5; },
       "tf policy only"},
      {[](AllocatorSpec& s) { s.sub_allocator = "host", s.coalescing = true; },
       "simulated sub-allocator only"},
      {[](AllocatorSpec& s) { s.sub_allocator = "vmm", s.coalescing = false; },
       "simulated sub-allocator only"},
      {[](AllocatorSpec& s) { s.policy = "nope"; }, "policy: unknown policy"},
      {[](AllocatorSpec& s) { s.policy = "pytorch", s.config = "nope:1"; },
       "config: "},
  };
  for (const Bad& bad : cases) {
    AllocatorSpec spec;
    bad.change(spec);
    const absl::Status status = ValidateAllocatorSpec(spec);
    ASSERT_FALSE(status.ok()) << bad.message;
    EXPECT_THAT(status.message(), HasSubstr(bad.message));
  }
  AllocatorSpec system;
  system.kind = "system";
  system.memory_limit = kGiB;
  EXPECT_TRUE(ValidateAllocatorSpec(system).ok());
  AllocatorSpec tf;
  tf.policy = "tf";
  tf.fragmentation_fraction = 0.5;
  EXPECT_TRUE(ValidateAllocatorSpec(tf).ok());
}

TEST(AllocatorSpecTest, DescriptionsSayWhatDiffersFromTheDefaults) {
  AllocatorSpec spec;
  spec.memory_limit = 16 * kGiB;
  EXPECT_EQ(DescribeAllocator(spec),
            "bfc(tight, simulated, limit 16.00GiB, growth)");
  spec.policy = "pytorch";
  spec.config = "expandable_segments:True";
  spec.sub_allocator = "vmm";
  spec.growth = false;
  spec.garbage_collection = true;
  EXPECT_EQ(DescribeAllocator(spec),
            "bfc(pytorch[expandable_segments:True], vmm, limit 16.00GiB, no "
            "growth, gc)");
  AllocatorSpec tf;
  tf.policy = "tf";
  tf.memory_limit = kGiB;
  tf.fragmentation_fraction = 0.5;
  tf.coalescing = true;
  EXPECT_EQ(DescribeAllocator(tf),
            "bfc(tf, simulated, limit 1.00GiB, growth, fragmentation fraction "
            "0.5, coalescing)");
  AllocatorSpec tight;
  tight.memory_limit = kGiB;
  tight.granule = 64 * kMiB;
  tight.coalescing = false;
  EXPECT_EQ(DescribeAllocator(tight),
            "bfc(tight, simulated, limit 1.00GiB, growth, no coalescing, "
            "granule 64.00MiB)");
  AllocatorSpec system;
  system.kind = "system";
  EXPECT_EQ(DescribeAllocator(system), "system");
  system.memory_limit = 2 * kGiB;
  EXPECT_EQ(DescribeAllocator(system), "system(limit 2.00GiB)");
}

TEST(AllocatorSpecTest, CreationErrorsNameTheOption) {
  struct Bad {
    std::function<void(AllocatorSpec&)> change;
    std::vector<std::string> says;
  };
  const Bad cases[] = {
      {[](AllocatorSpec& s) { s.policy = "greedy"; },
       {"policy:", "'greedy'", "tight", "tf", "pytorch"}},
      {[](AllocatorSpec& s) { s.sub_allocator = "cxl"; },
       {"sub_allocator:", "'cxl'", "simulated"}},
      {[](AllocatorSpec& s) { s.policy = "pytorch", s.config = "max_split:1"; },
       {"config:", "'max_split'", "max_split_size_mb"}},
      {[](AllocatorSpec& s) { s.policy = "tf", s.config = "granule:1"; },
       {"config:", "'granule'", "takes none"}},
      {[](AllocatorSpec& s) { s.granule = 1000; }, {"granule 1000", "256"}},
      {[](AllocatorSpec& s) {
         s.policy = "pytorch", s.config = "expandable_segments:True",
         s.sub_allocator = "host";
       },
       {"config:", "expandable_segments"}},
      {[](AllocatorSpec& s) {
         s.policy = "pytorch", s.config = "expandable_segments:True",
         s.coalescing = false;
       },
       {"config:", "expandable_segments"}},
  };
  for (const Bad& bad : cases) {
    AllocatorSpec spec;
    spec.memory_limit = kGiB;
    bad.change(spec);
    absl::StatusOr<BuiltAllocator> built = CreateAllocator(spec);
    ASSERT_FALSE(built.ok()) << bad.says.front();
    for (const std::string& part : bad.says)
      EXPECT_THAT(built.status().message(), HasSubstr(part));
  }
}

TEST(AllocatorSpecTest, CreatesBfcAndSystemAllocators) {
  AllocatorSpec spec;
  spec.memory_limit = 64 * kMiB;
  spec.policy = "pytorch";
  spec.config = "expandable_segments:True";
  absl::StatusOr<BuiltAllocator> bfc =
      CreateAllocator(spec, QuietOptions(true));
  ASSERT_TRUE(bfc.ok()) << bfc.status();
  ASSERT_NE(bfc->bfc, nullptr);
  EXPECT_EQ(bfc->bfc, bfc->allocator.get());
  EXPECT_EQ(bfc->bfc->memory_limit(), 64 * kMiB);
  EXPECT_EQ(bfc->bfc->PolicyDescription(), "pytorch(expandable_segments:True)");
  EXPECT_TRUE(bfc->bfc->upstream().SupportsCoalescing());
  void* p = bfc->allocator->Allocate(1000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(bfc->bfc->AllocatedSize(p), 1024u);
  bfc->allocator->Deallocate(p);
  EXPECT_EQ(bfc->allocator->Allocate(65 * kMiB), nullptr);

  AllocatorSpec system;
  system.kind = "system";
  system.memory_limit = 1 * kMiB;
  absl::StatusOr<BuiltAllocator> limited = CreateAllocator(system);
  ASSERT_TRUE(limited.ok()) << limited.status();
  EXPECT_EQ(limited->bfc, nullptr);
  EXPECT_EQ(limited->wrapped.size(), 1u);
  EXPECT_EQ(limited->allocator->Allocate(2 * kMiB), nullptr);
  void* q = limited->allocator->Allocate(4096);
  ASSERT_NE(q, nullptr);
  limited->allocator->Deallocate(q);
}

TEST(AllocatorSpecTest, TfUpstreamDoesNotCoalesceUnlessAsked) {
  AllocatorSpec spec;
  spec.memory_limit = kGiB;
  spec.policy = "tf";
  EXPECT_FALSE((*CreateAllocator(spec)).bfc->upstream().SupportsCoalescing());
  spec.coalescing = true;
  EXPECT_TRUE((*CreateAllocator(spec)).bfc->upstream().SupportsCoalescing());
  spec.policy = "tight";
  spec.coalescing.reset();
  EXPECT_TRUE((*CreateAllocator(spec)).bfc->upstream().SupportsCoalescing());
}

// CreateAllocator with the tf policy against BfcAllocator's own default:
// identical offsets, failures and statistics on a randomized sequence.
class TfSpecMatchesBfcTest : public ::testing::TestWithParam<bool> {};

TEST_P(TfSpecMatchesBfcTest, SamePlacementsAsTheDefaultBfcAllocator) {
  const bool growth = GetParam();
  const uint64_t limit = 512 * kMiB;
  AllocatorSpec spec;
  spec.policy = "tf";
  spec.memory_limit = limit;
  spec.capacity = 2 * limit;
  spec.growth = growth;
  absl::StatusOr<BuiltAllocator> built =
      CreateAllocator(spec, QuietOptions(growth));
  ASSERT_TRUE(built.ok()) << built.status();
  BfcAllocator& from_spec = *built->bfc;
  BfcAllocator plain(std::make_unique<SimulatedSubAllocator>(2 * limit), limit,
                     QuietOptions(growth));
  const auto offset = [](BfcAllocator& bfc, void* p) {
    return reinterpret_cast<uint64_t>(p) -
           reinterpret_cast<uint64_t>(bfc.upstream().BaseAddress());
  };
  std::mt19937_64 rng(growth ? 11 : 12);
  std::vector<std::pair<void*, void*>> live;
  int failures = 0;
  for (int step = 0; step < 6000; ++step) {
    if (live.empty() || rng() % 100 < 55) {
      const size_t bytes = std::max<size_t>(
          1, static_cast<size_t>(std::exp2(
                 std::uniform_real_distribution<double>(0, 26)(rng))));
      const size_t alignment = rng() % 4 == 0 ? size_t{256} << (rng() % 5) : 1;
      void* a = from_spec.AllocateRaw(alignment, bytes);
      void* b = plain.AllocateRaw(alignment, bytes);
      ASSERT_EQ(a == nullptr, b == nullptr) << "step " << step;
      if (a == nullptr) {
        ++failures;
        continue;
      }
      ASSERT_EQ(offset(from_spec, a), offset(plain, b)) << "step " << step;
      live.push_back({a, b});
    } else {
      const size_t victim = rng() % live.size();
      from_spec.Deallocate(live[victim].first);
      plain.Deallocate(live[victim].second);
      live[victim] = live.back();
      live.pop_back();
    }
  }
  EXPECT_GT(failures, 10);
  const AllocatorStats a = *from_spec.GetStats();
  const AllocatorStats b = *plain.GetStats();
  EXPECT_EQ(a.bytes_in_use, b.bytes_in_use);
  EXPECT_EQ(a.pool_bytes, b.pool_bytes);
  EXPECT_EQ(a.peak_pool_bytes, b.peak_pool_bytes);
  EXPECT_EQ(a.num_allocs, b.num_allocs);
  EXPECT_TRUE(InvariantsHold(from_spec));
  for (const auto& [x, y] : live) {
    from_spec.Deallocate(x);
    plain.Deallocate(y);
  }
}

INSTANTIATE_TEST_SUITE_P(GrowthOrNot, TfSpecMatchesBfcTest, ::testing::Bool());

}  // namespace
}  // namespace tensormem
