// Every registered policy, with and without growth and coalescing and in a
// few configurations, under the invariant checker: randomized single-threaded
// sequences checked after every step, and four threads on one allocator
// checking that no block is handed to two owners.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "alloc/policy_test_util.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/host_sub_allocator.h"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/alloc/vmm_sub_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using testing::InvariantsHold;
using testing::QuietOptions;

struct Case {
  std::string policy;
  std::string config;
  bool growth = true;
  bool coalescing = false;
};

void PrintTo(const Case& c, std::ostream* out) {
  *out << c.policy << "[" << c.config << "]"
       << (c.growth ? " growth" : " no growth")
       << (c.coalescing ? ", coalescing" : "");
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.policy + "_" + info.param.config +
                     (info.param.growth ? "_Growth" : "_NoGrowth") +
                     (info.param.coalescing ? "_Coalescing" : "_Plain");
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

// The default configuration and the registry's examples, so a policy's new
// keys join the checker with its registration.
std::vector<std::string> ConfigsOf(const PolicyInfo& policy) {
  std::vector<std::string> configs = {""};
  for (std::string_view example : policy.example_configs)
    configs.emplace_back(example);
  return configs;
}

bool NeedsCoalescing(const std::string& config) {
  return config.find("expandable_segments:True") != std::string::npos;
}

// Every policy of the registry, so new policies join automatically.
std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const PolicyInfo& info : Policies()) {
    for (const std::string& config : ConfigsOf(info)) {
      for (bool growth : {true, false}) {
        for (bool coalescing : {false, true}) {
          if (NeedsCoalescing(config) && !coalescing) continue;
          cases.push_back({std::string(info.name), config, growth, coalescing});
        }
      }
    }
  }
  return cases;
}

PolicyEnvironment EnvironmentOf(const Case& c, uint64_t limit) {
  PolicyEnvironment environment;
  environment.memory_limit = limit;
  environment.allow_growth = c.growth;
  environment.upstream_coalesces = c.coalescing;
  return environment;
}

std::unique_ptr<AllocationPolicy> PolicyOf(const Case& c, uint64_t limit) {
  absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy =
      CreatePolicy(c.policy, EnvironmentOf(c, limit), c.config);
  EXPECT_TRUE(policy.ok()) << policy.status();
  return policy.ok() ? *std::move(policy) : nullptr;
}

// Log-uniform sizes from 1 byte to `max_bytes`: mostly small, some huge.
size_t RandomSize(std::mt19937_64& rng, size_t max_bytes) {
  std::uniform_real_distribution<double> exponent(
      0, std::log2(static_cast<double>(max_bytes)));
  return std::max<size_t>(1, static_cast<size_t>(std::exp2(exponent(rng))));
}

// Half the requests take the default alignment, the others 256 .. 4096.
size_t RandomAlignment(std::mt19937_64& rng) {
  return rng() % 2 ? 1 : size_t{256} << (rng() % 5);
}

struct LiveBlock {
  void* ptr;
  size_t bytes;
};

// In-use chunks of one region serve requests of one pool.
::testing::AssertionResult PoolsKeptApart(const BfcAllocator& bfc,
                                          const AllocationPolicy& policy) {
  for (const MemoryDump::Region& region : bfc.RecordMemoryDump().regions) {
    int region_pool = -1;
    for (const MemoryDump::Chunk& chunk : region.chunks) {
      if (!chunk.in_use) continue;
      const int pool =
          policy.PoolFor(*policy.RoundedSize(chunk.requested_size));
      if (region_pool >= 0 && pool != region_pool) {
        return ::testing::AssertionFailure()
               << "region at offset " << region.offset << " serves pools "
               << region_pool << " and " << pool;
      }
      region_pool = pool;
    }
  }
  return ::testing::AssertionSuccess();
}

class PolicyInvariantsTest : public ::testing::TestWithParam<Case> {};

TEST_P(PolicyInvariantsTest, RandomSequencesKeepInvariantsAndStatistics) {
  const uint64_t limit = 1 * kGiB;
  auto owned =
      std::make_unique<SimulatedSubAllocator>(4 * limit, GetParam().coalescing);
  const SimulatedSubAllocator& upstream = *owned;
  std::unique_ptr<AllocationPolicy> rules = PolicyOf(GetParam(), limit);
  ASSERT_NE(rules, nullptr);
  BfcAllocator bfc(std::move(owned), limit, QuietOptions(GetParam().growth),
                   PolicyOf(GetParam(), limit));
  std::mt19937_64 rng(std::hash<std::string>{}(CaseName({GetParam(), 0})));
  std::vector<LiveBlock> live;
  int served = 0, refused = 0;
  for (int step = 0; step < 1500; ++step) {
    const int action = rng() % 100;
    if (live.empty() || action < 62) {
      const size_t bytes = RandomSize(rng, 64 * kMiB);
      const size_t alignment = RandomAlignment(rng);
      const uint64_t in_use_before = bfc.GetStats()->bytes_in_use;
      void* p = bfc.AllocateRaw(alignment, bytes);
      if (p == nullptr) {
        ++refused;
        ASSERT_EQ(bfc.GetStats()->bytes_in_use, in_use_before);
        ASSERT_FALSE(bfc.LastFailureReport().empty());
      } else {
        ++served;
        ASSERT_EQ(
            reinterpret_cast<uintptr_t>(p) % std::max<size_t>(alignment, 256),
            0u)
            << "step " << step;
        ASSERT_EQ(bfc.RequestedSize(p), bytes);
        ASSERT_GE(*bfc.AllocatedSize(p), *rules->RoundedSize(bytes));
        live.push_back({p, bytes});
      }
    } else if (action < 95) {
      const size_t victim = rng() % live.size();
      ASSERT_TRUE(bfc.CheckedDeallocate(live[victim].ptr).ok());
      live[victim] = live.back();
      live.pop_back();
    } else {
      bfc.ReleaseFreeRegions();
    }
    ASSERT_TRUE(InvariantsHold(bfc)) << "step " << step;
    const AllocatorStats stats = *bfc.GetStats();
    uint64_t allocated = 0;
    for (const LiveBlock& block : live)
      allocated += *bfc.AllocatedSize(block.ptr);
    ASSERT_EQ(stats.bytes_in_use, allocated) << "step " << step;
    ASSERT_LE(stats.pool_bytes, limit) << "step " << step;
    ASSERT_EQ(stats.pool_bytes, upstream.bytes_in_use()) << "step " << step;
    if (step % 50 == 0) {
      ASSERT_TRUE(PoolsKeptApart(bfc, *rules)) << "step " << step;
    }
  }
  // Both outcomes must have happened for the sequence to mean much.
  EXPECT_GT(served, 300);
  EXPECT_GT(refused, 0);
  for (const LiveBlock& block : live) bfc.Deallocate(block.ptr);
  bfc.ReleaseFreeRegions();
  EXPECT_EQ(bfc.GetStats()->bytes_in_use, 0u);
  EXPECT_EQ(bfc.GetStats()->pool_bytes, 0u);
  EXPECT_EQ(upstream.bytes_in_use(), 0u);
  EXPECT_TRUE(InvariantsHold(bfc));
}

INSTANTIATE_TEST_SUITE_P(EveryPolicy, PolicyInvariantsTest,
                         ::testing::ValuesIn(AllCases()), CaseName);

// One tag every 256 bytes: blocks start 256-aligned, so any two blocks that
// overlap share a tag position, and the owner that wrote first sees the other
// owner's tag.
void WriteTags(const LiveBlock& block, uint64_t tag) {
  char* bytes = static_cast<char*>(block.ptr);
  for (size_t offset = 0; offset < block.bytes; offset += 256) {
    std::memcpy(bytes + offset, &tag,
                std::min(sizeof(tag), block.bytes - offset));
  }
}

bool TagsIntact(const LiveBlock& block, uint64_t tag) {
  const char* bytes = static_cast<const char*>(block.ptr);
  for (size_t offset = 0; offset < block.bytes; offset += 256) {
    if (std::memcmp(bytes + offset, &tag,
                    std::min(sizeof(tag), block.bytes - offset)) != 0) {
      return false;
    }
  }
  return true;
}

struct ThreadCase {
  Case policy;
  std::string upstream;  // host or vmm: memory the test may write
};

std::vector<ThreadCase> AllThreadCases() {
  std::vector<ThreadCase> cases;
  for (const PolicyInfo& info : Policies()) {
    for (const std::string& config : ConfigsOf(info)) {
      if (!NeedsCoalescing(config)) {
        cases.push_back(
            {{std::string(info.name), config, true, false}, "host"});
        cases.push_back(
            {{std::string(info.name), config, false, false}, "host"});
      }
      cases.push_back({{std::string(info.name), config, true, true}, "vmm"});
    }
  }
  return cases;
}

void PrintTo(const ThreadCase& c, std::ostream* out) {
  PrintTo(c.policy, out);
  *out << " over " << c.upstream;
}

std::string ThreadCaseName(const ::testing::TestParamInfo<ThreadCase>& info) {
  return CaseName({info.param.policy, 0}) + "_" + info.param.upstream;
}

class PolicyThreadTest : public ::testing::TestWithParam<ThreadCase> {};

TEST_P(PolicyThreadTest, FourThreadsNeverShareABlock) {
  const ThreadCase& param = GetParam();
  const uint64_t limit = 256 * kMiB;
  std::unique_ptr<SubAllocator> upstream;
  if (param.upstream == "vmm") {
    upstream = std::make_unique<VmmSubAllocator>(2 * limit);
  } else {
    upstream = std::make_unique<HostSubAllocator>();
  }
  BfcAllocator bfc(std::move(upstream), limit,
                   QuietOptions(param.policy.growth),
                   PolicyOf(param.policy, limit));
  std::atomic<int64_t> allocations{0};
  std::atomic<int> overwritten{0};
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t + 1);
      std::vector<std::pair<LiveBlock, uint64_t>> live;
      auto release = [&](size_t victim) {
        if (!TagsIntact(live[victim].first, live[victim].second)) ++overwritten;
        EXPECT_TRUE(bfc.CheckedDeallocate(live[victim].first.ptr).ok());
        live[victim] = live.back();
        live.pop_back();
      };
      for (uint64_t op = 0; op < 2000; ++op) {
        if (live.empty() || (live.size() < 64 && rng() % 2 == 0)) {
          const size_t bytes = RandomSize(rng, 2 * kMiB);
          void* p = bfc.AllocateRaw(RandomAlignment(rng), bytes);
          if (p == nullptr) continue;
          ++allocations;
          const uint64_t tag = (t + 1) << 56 | op;
          live.push_back({{p, bytes}, tag});
          WriteTags(live.back().first, tag);
        } else {
          release(rng() % live.size());
        }
      }
      while (!live.empty()) release(live.size() - 1);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(overwritten.load(), 0);
  ASSERT_TRUE(InvariantsHold(bfc));
  const AllocatorStats stats = *bfc.GetStats();
  EXPECT_EQ(stats.bytes_in_use, 0u);
  EXPECT_EQ(stats.num_allocs, allocations.load());
  EXPECT_GT(allocations.load(), 3000);
}

INSTANTIATE_TEST_SUITE_P(EveryPolicy, PolicyThreadTest,
                         ::testing::ValuesIn(AllThreadCases()), ThreadCaseName);

}  // namespace
}  // namespace tensormem
