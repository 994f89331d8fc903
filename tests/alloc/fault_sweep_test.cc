// Fault injection sweeps over the simulated upstream: for fixed workloads
// (fault_sweep_util.h), the upstream fails at call k for every k, returns
// short regions, or returns misaligned ones. Whatever it does, the BFC
// allocator keeps its invariants and statistics, leaks nothing (every region
// goes back with the size it was reported), and a request that failed
// succeeds once the upstream works and memory allows.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "alloc/bfc_test_util.h"
#include "alloc/fault_sweep_util.h"
#include "alloc/policy_test_util.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/fault_injecting_sub_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"

namespace tensormem {
namespace {

using testing::InvariantsHold;
using testing::PolicyChoice;
using testing::QuietOptions;

struct Config {
  bool growth;
  bool gc;
  bool coalescing;
  PolicyChoice policy;
};

std::unique_ptr<BfcAllocator> MakeAllocator(
    const Config& config, std::unique_ptr<SubAllocator> upstream) {
  BfcAllocator::Options options = QuietOptions(config.growth);
  options.garbage_collection = config.gc;
  absl::StatusOr<std::unique_ptr<BfcAllocator>> allocator =
      testing::MakeChoiceBfc(config.policy, std::move(upstream), 64 * kMiB,
                             options);
  EXPECT_TRUE(allocator.ok()) << allocator.status();
  return allocator.ok() ? *std::move(allocator) : nullptr;
}

std::unique_ptr<BfcAllocator> MakeFaulty(const Config& config,
                                         FaultInjectingSubAllocator** probe) {
  auto faulty = std::make_unique<FaultInjectingSubAllocator>(
      std::make_unique<SimulatedSubAllocator>(256 * kMiB, config.coalescing));
  *probe = faulty.get();
  return MakeAllocator(config, std::move(faulty));
}

// Every policy in every configuration multiplies the runs: sanitizer suites
// sweep fewer workloads.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr uint32_t kWorkloads = 6;
#else
constexpr uint32_t kWorkloads = 24;
#endif

class FaultSweepTest : public ::testing::TestWithParam<Config> {};

TEST_P(FaultSweepTest, UpstreamFailsAtEveryCall) {
  const Config config = GetParam();
  const int64_t fault_points = testing::SweepUpstreamFaults(
      [&config](FaultInjectingSubAllocator** probe) {
        return MakeFaulty(config, probe);
      },
      kWorkloads);
  std::printf("[sweep] fault points: %lld\n",
              static_cast<long long>(fault_points));
}

TEST_P(FaultSweepTest, ShortRegionsAreUsedOnlyAsFarAsReported) {
  for (size_t shortfall : {size_t{1}, size_t{255}, size_t{256}, size_t{4097},
                           size_t{1} << 20, size_t{64} << 20}) {
    SCOPED_TRACE(::testing::Message() << "shortfall " << shortfall);
    FaultInjectingSubAllocator* probe = nullptr;
    auto allocator = MakeFaulty(GetParam(), &probe);
    ASSERT_NE(allocator, nullptr);
    probe->SetShortfall(shortfall);
    testing::RunFaultWorkload(*allocator, *probe, testing::FaultWorkload(7));
  }
  std::printf("[sweep] short regions: 6\n");
}

// Returns regions `shift` bytes past an aligned start (and that many short):
// an upstream breaking the 256-byte alignment contract.
class MisaligningSubAllocator final : public SubAllocator {
 public:
  MisaligningSubAllocator(size_t shift, bool coalescing)
      : shift_(shift), wrapped_(256 * kMiB, coalescing) {}
  ~MisaligningSubAllocator() override { EXPECT_TRUE(regions_.empty()); }
  void* Alloc(size_t bytes, size_t alignment, size_t* bytes_received) override {
    size_t received = 0;
    char* region =
        static_cast<char*>(wrapped_.Alloc(bytes, alignment, &received));
    if (region == nullptr || received <= shift_) return region;
    regions_[region + shift_] = received;
    *bytes_received = received - shift_;
    return region + shift_;
  }
  void Free(void* ptr, size_t bytes) override {
    auto it = regions_.find(ptr);
    ASSERT_NE(it, regions_.end()) << "unknown region freed";
    EXPECT_EQ(bytes + shift_, it->second);
    wrapped_.Free(static_cast<char*>(ptr) - shift_, it->second);
    regions_.erase(it);
  }
  // What the wrapped upstream says; the shift breaks every seam anyway.
  bool SupportsCoalescing() const override {
    return wrapped_.SupportsCoalescing();
  }
  MemoryKind GetMemoryKind() const override { return MemoryKind::kSimulated; }
  std::string Name() const override { return "misaligning"; }

 private:
  const size_t shift_;
  SimulatedSubAllocator wrapped_;
  absl::flat_hash_map<void*, size_t> regions_;
};

TEST_P(FaultSweepTest, MisalignedRegionsAreReturnedUnused) {
  for (size_t shift : {size_t{1}, size_t{8}, size_t{64}, size_t{255}}) {
    SCOPED_TRACE(::testing::Message() << "shift " << shift);
    auto allocator =
        MakeAllocator(GetParam(), std::make_unique<MisaligningSubAllocator>(
                                      shift, GetParam().coalescing));
    ASSERT_NE(allocator, nullptr);
    for (const testing::FaultRequest& request : testing::FaultWorkload(11)) {
      EXPECT_EQ(allocator->AllocateRaw(request.alignment, request.bytes),
                nullptr);
      ASSERT_TRUE(InvariantsHold(*allocator));
      EXPECT_EQ(allocator->GetStats()->pool_bytes, 0u);
    }
  }
}

// The five growth / GC / coalescing settings for every policy in its
// defaults; its example configurations in two (with and without growth).
std::vector<Config> AllConfigs() {
  std::vector<Config> configs;
  for (const PolicyChoice& policy : testing::AllPolicyChoices()) {
    std::vector<Config> settings = {{true, false, false, {}},
                                    {true, true, false, {}},
                                    {true, true, true, {}},
                                    {false, false, false, {}},
                                    {false, true, false, {}}};
    if (!policy.config.empty())
      settings = {{true, true, true, {}}, {false, false, false, {}}};
    for (Config config : settings) {
      if (policy.NeedsCoalescing()) config.coalescing = true;
      config.policy = policy;
      configs.push_back(config);
    }
  }
  return configs;
}

INSTANTIATE_TEST_SUITE_P(Policies, FaultSweepTest,
                         ::testing::ValuesIn(AllConfigs()),
                         [](const ::testing::TestParamInfo<Config>& info) {
                           return info.param.policy.TestName() + "_" +
                                  (info.param.growth ? "Growth" : "NoGrowth") +
                                  (info.param.gc ? "Gc" : "NoGc") +
                                  (info.param.coalescing ? "Coalescing" : "");
                         });

}  // namespace
}  // namespace tensormem
