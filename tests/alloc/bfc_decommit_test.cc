// Decommitting free memory inside regions before the pool grows, and
// recommitting it when that is cheaper than extending the free tail (the
// `tight` policy with growth over an upstream that can decommit).
#include <cstring>
#include <memory>
#include <utility>

#include "alloc/bfc_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/fault_injecting_sub_allocator.h"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/alloc/vmm_sub_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using testing::DecommittedBytes;
using testing::MakeBfcOver;
using testing::PoolBytes;
using testing::QuietOptions;

// 4 MiB then 2 MiB, the 4 MiB freed: a 6 MiB request finds a 4 MiB hole.
struct HoleScenario {
  explicit HoleScenario(BfcAllocator& allocator) {
    first = allocator.Allocate(4 * kMiB);
    second = allocator.Allocate(2 * kMiB);
    allocator.Deallocate(first);
    third = allocator.Allocate(6 * kMiB);
  }
  void* first;
  void* second;
  void* third;
};

TEST(BfcDecommit, HolesGoBackBeforeThePoolGrows) {
  auto upstream =
      std::make_unique<SimulatedSubAllocator>(kGiB, /*coalescing=*/true);
  SimulatedSubAllocator* simulated = upstream.get();
  auto allocator = MakeBfcOver(std::move(upstream), "tight");
  HoleScenario scenario(*allocator);
  ASSERT_NE(scenario.third, nullptr);
  // The hole's 4 MiB went back; the 6 MiB came from extending: 2 + 6 MiB,
  // where keeping the hole would have made 12 MiB.
  EXPECT_EQ(PoolBytes(*allocator), 8 * kMiB);
  EXPECT_EQ(allocator->GetStats()->peak_pool_bytes, 8 * kMiB);
  EXPECT_EQ(DecommittedBytes(*allocator), 4 * kMiB);
  EXPECT_EQ(simulated->bytes_in_use(), 8 * kMiB);
  ASSERT_TRUE(allocator->CheckInvariants().ok())
      << allocator->CheckInvariants();

  // With the 2 MiB block freed too, the 6 MiB stretch below the 6 MiB block
  // is decommitted; a 5 MiB request recommits three granules of it at the
  // old addresses instead of extending the region (a tie: both cost 6 MiB).
  allocator->Deallocate(scenario.second);
  void* reused = allocator->Allocate(5 * kMiB);
  EXPECT_EQ(reused, scenario.first);
  EXPECT_EQ(PoolBytes(*allocator), 12 * kMiB);
  EXPECT_EQ(DecommittedBytes(*allocator), 0u);
  EXPECT_EQ(simulated->bytes_in_use(), 12 * kMiB);
  EXPECT_EQ(allocator->RecordMemoryDump().regions.size(), 1u);
  ASSERT_TRUE(allocator->CheckInvariants().ok())
      << allocator->CheckInvariants();

  // Everything freed: garbage collection returns the whole region.
  allocator->Deallocate(reused);
  allocator->Deallocate(scenario.third);
  EXPECT_TRUE(allocator->ReleaseFreeRegions());
  EXPECT_EQ(PoolBytes(*allocator), 0u);
  EXPECT_EQ(simulated->bytes_in_use(), 0u);
  EXPECT_TRUE(allocator->CheckInvariants().ok());
}

// decommit:on_pressure keeps holes while memory lasts (on a GPU each
// decommit waits for the device) and gives them back when it runs short.
TEST(BfcDecommit, OnPressureHolesGoBackOnlyWhenMemoryIsShort) {
  auto upstream =
      std::make_unique<SimulatedSubAllocator>(kGiB, /*coalescing=*/true);
  SimulatedSubAllocator* simulated = upstream.get();
  auto allocator = MakeBfcOver(std::move(upstream), "tight", 14 * kMiB,
                               "decommit:on_pressure");
  HoleScenario scenario(*allocator);
  ASSERT_NE(scenario.third, nullptr);
  EXPECT_EQ(PoolBytes(*allocator), 12 * kMiB);  // the hole kept
  EXPECT_EQ(DecommittedBytes(*allocator), 0u);
  // Growing by 6 MiB would pass the 14 MiB limit: the hole goes back first.
  void* fourth = allocator->Allocate(6 * kMiB);
  ASSERT_NE(fourth, nullptr) << allocator->LastFailureReport();
  EXPECT_EQ(PoolBytes(*allocator), 14 * kMiB);
  EXPECT_EQ(simulated->bytes_in_use(), 14 * kMiB);
  ASSERT_TRUE(allocator->CheckInvariants().ok())
      << allocator->CheckInvariants();
}

TEST(BfcDecommit, TheDecommitKeyIsCheckedAndDescribed) {
  PolicyEnvironment environment;
  environment.allow_growth = true;
  for (std::string_view policy : {"tight", "planned"}) {
    absl::StatusOr<std::unique_ptr<AllocationPolicy>> made =
        CreatePolicy(policy, environment, "decommit:on_pressure");
    ASSERT_TRUE(made.ok()) << made.status();
    EXPECT_EQ((*made)->DecommitsToHoldPeak(), false);
    EXPECT_THAT((*made)->Describe(),
                ::testing::HasSubstr("decommit on_pressure"));
    made = CreatePolicy(policy, environment, "decommit:hold_peak");
    EXPECT_EQ((*made)->DecommitsToHoldPeak(), true);
    made = CreatePolicy(policy, environment, "");
    EXPECT_EQ((*made)->DecommitsToHoldPeak(), std::nullopt);  // the upstream's
    made = CreatePolicy(policy, environment, "decommit:never");
    EXPECT_THAT(std::string(made.status().message()),
                ::testing::HasSubstr("accepted: hold_peak, on_pressure"));
  }
  EXPECT_FALSE(CreatePolicy("tight", environment, "planning:inline").ok());
}

// An upstream whose decommit drains a device (a GPU's) keeps holes unless
// told to hold the peak.
class DrainingSimulated final : public SubAllocator {
 public:
  void* Alloc(size_t bytes, size_t alignment, size_t* received) override {
    return memory_.Alloc(bytes, alignment, received);
  }
  void Free(void* ptr, size_t bytes) override { memory_.Free(ptr, bytes); }
  bool SupportsCoalescing() const override { return true; }
  MemoryKind GetMemoryKind() const override { return memory_.GetMemoryKind(); }
  std::string Name() const override { return "draining"; }
  uint64_t DecommitGranularity() const override {
    return memory_.DecommitGranularity();
  }
  bool Decommit(void* ptr, size_t bytes) override {
    return memory_.Decommit(ptr, bytes);
  }
  bool Recommit(void* ptr, size_t bytes) override {
    return memory_.Recommit(ptr, bytes);
  }
  bool DecommitWaitsForDevice() const override { return true; }

 private:
  SimulatedSubAllocator memory_{kGiB, /*coalescing=*/true};
};

TEST(BfcDecommit, OverADrainingUpstreamHolesStayUnlessConfigured) {
  for (std::string_view config : {"", "decommit:hold_peak"}) {
    SCOPED_TRACE(config);
    auto allocator = MakeBfcOver(std::make_unique<DrainingSimulated>(), "tight",
                                 kGiB, config);
    HoleScenario scenario(*allocator);
    ASSERT_NE(scenario.third, nullptr);
    EXPECT_EQ(PoolBytes(*allocator), config.empty() ? 12 * kMiB : 8 * kMiB);
    EXPECT_TRUE(allocator->CheckInvariants().ok());
  }
}

TEST(BfcDecommit, AOneGranuleHoleStays) {
  auto allocator = MakeBfcOver(
      std::make_unique<SimulatedSubAllocator>(kGiB, /*coalescing=*/true),
      "tight");
  // [2 MiB][2 MiB], the low block freed: a 4 MiB request finds a hole of one
  // granule. It stays committed (giving it back would save 2 MiB and leave
  // a seam in free memory), and the region grows by 4 MiB.
  void* low = allocator->Allocate(2 * kMiB);
  void* high = allocator->Allocate(2 * kMiB);
  allocator->Deallocate(low);
  void* big = allocator->Allocate(4 * kMiB);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(DecommittedBytes(*allocator), 0u);
  EXPECT_EQ(PoolBytes(*allocator), 8 * kMiB);
  // A hole of two granules goes back: the low 2 MiB and the 4 MiB block
  // above the high one are free but apart; after the high block is freed
  // they are one 8 MiB chunk, and a 10 MiB request gives it back first.
  allocator->Deallocate(big);
  allocator->Deallocate(high);
  void* larger = allocator->Allocate(10 * kMiB);
  ASSERT_NE(larger, nullptr);
  EXPECT_EQ(allocator->GetStats()->peak_pool_bytes, 10 * kMiB);
  EXPECT_TRUE(allocator->CheckInvariants().ok())
      << allocator->CheckInvariants();
  allocator->Deallocate(larger);
}

TEST(BfcDecommit, RecommitsOnlyTheGranulesARequestLacks) {
  auto allocator = MakeBfcOver(
      std::make_unique<SimulatedSubAllocator>(kGiB, /*coalescing=*/true),
      "tight");
  // [8 MiB][1 MiB][2 MiB], then the 8 MiB freed and a 10 MiB request
  // decommits the 8 MiB hole and extends the region.
  void* low = allocator->Allocate(8 * kMiB);
  void* middle = allocator->Allocate(kMiB);
  void* high = allocator->Allocate(2 * kMiB);
  allocator->Deallocate(low);
  void* big = allocator->Allocate(10 * kMiB);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(DecommittedBytes(*allocator), 8 * kMiB);
  // Freeing the middle block leaves 1 MiB free (no whole granule) above the
  // decommitted 8 MiB: 3 MiB needs its top granule there, 2 MiB, instead of
  // 4 MiB at the bottom or all 8.
  allocator->Deallocate(middle);
  const uint64_t before = PoolBytes(*allocator);
  void* small = allocator->Allocate(3 * kMiB);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(PoolBytes(*allocator), before + 2 * kMiB);
  EXPECT_EQ(small, static_cast<char*>(low) + 6 * kMiB);
  EXPECT_EQ(DecommittedBytes(*allocator), 6 * kMiB);
  EXPECT_TRUE(allocator->CheckInvariants().ok())
      << allocator->CheckInvariants();
  for (void* block : {small, high, big}) allocator->Deallocate(block);
  EXPECT_TRUE(allocator->CheckInvariants().ok());
}

TEST(BfcDecommit, WhenTheRegionCannotGrowACostlierRecommitServes) {
  // 12 MiB of address space in all.
  auto allocator = MakeBfcOver(
      std::make_unique<SimulatedSubAllocator>(12 * kMiB, /*coalescing=*/true),
      "tight");
  // [4 MiB][2 MiB], the 4 MiB freed: a 6 MiB request gives it back and
  // extends the region to the 12 MiB of address space.
  void* low = allocator->Allocate(4 * kMiB);
  void* kept = allocator->Allocate(2 * kMiB);
  allocator->Deallocate(low);
  void* top = allocator->Allocate(6 * kMiB);
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(DecommittedBytes(*allocator), 4 * kMiB);
  // [hole 4][kept 2][4 MiB block][2 MiB free tail]: a 4 MiB request would
  // extend the tail by one granule, but no address space is left; the hole
  // (4 MiB of commit) serves it instead of failing.
  allocator->Deallocate(top);
  void* middle = allocator->Allocate(4 * kMiB);
  ASSERT_NE(middle, nullptr);
  void* again = allocator->Allocate(4 * kMiB);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again, low);
  EXPECT_EQ(DecommittedBytes(*allocator), 0u);
  EXPECT_EQ(PoolBytes(*allocator), 12 * kMiB);
  EXPECT_TRUE(allocator->CheckInvariants().ok())
      << allocator->CheckInvariants();
  for (void* block : {again, kept, middle}) allocator->Deallocate(block);
}

TEST(BfcDecommit, TheTfPolicyNeverDecommits) {
  auto allocator = MakeBfcOver(
      std::make_unique<SimulatedSubAllocator>(kGiB, /*coalescing=*/true), "tf");
  HoleScenario scenario(*allocator);
  ASSERT_NE(scenario.third, nullptr);
  EXPECT_EQ(DecommittedBytes(*allocator), 0u);
  EXPECT_GE(PoolBytes(*allocator), 12 * kMiB);
}

TEST(BfcDecommit, AFailedRecommitFallsBackToGrowth) {
  auto faulty = std::make_unique<FaultInjectingSubAllocator>(
      std::make_unique<SimulatedSubAllocator>(kGiB, /*coalescing=*/true));
  FaultInjectingSubAllocator* probe = faulty.get();
  auto allocator = MakeBfcOver(std::move(faulty), "tight");
  HoleScenario scenario(*allocator);
  allocator->Deallocate(scenario.second);
  // Calls so far: three extensions. The recommit is the fourth.
  ASSERT_EQ(probe->alloc_calls(), 3);
  probe->FailAllocCall(4);
  void* block = allocator->Allocate(5 * kMiB);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(probe->failed_allocs(), 1);
  // The recommit of the 4 MiB hole (joining the free 2 MiB above it) failed:
  // served by a new extension above the 6 MiB block; the hole stays
  // decommitted and nothing is counted twice (2 + 6 + 6 MiB committed).
  EXPECT_EQ(block, static_cast<char*>(scenario.third) + 6 * kMiB);
  EXPECT_EQ(DecommittedBytes(*allocator), 4 * kMiB);
  EXPECT_EQ(PoolBytes(*allocator), 14 * kMiB);
  EXPECT_TRUE(allocator->CheckInvariants().ok())
      << allocator->CheckInvariants();
  allocator->Deallocate(block);
  allocator->Deallocate(scenario.third);
  EXPECT_EQ(probe->bad_frees(), 0);
}

TEST(BfcDecommit, TheLimitCountsOnlyCommittedMemory) {
  // 8 MiB limit: the 6 MiB request fits only because the hole went back.
  auto allocator = MakeBfcOver(
      std::make_unique<SimulatedSubAllocator>(kGiB, /*coalescing=*/true),
      "tight", /*limit=*/8 * kMiB);
  HoleScenario scenario(*allocator);
  EXPECT_NE(scenario.third, nullptr);
  EXPECT_EQ(PoolBytes(*allocator), 8 * kMiB);
  // Nothing is left for 1 MiB more.
  EXPECT_EQ(allocator->Allocate(kMiB), nullptr);
  EXPECT_TRUE(allocator->CheckInvariants().ok());
}

TEST(BfcDecommit, OverVmmPagesComeBackUsable) {
  auto upstream = std::make_unique<VmmSubAllocator>(256 * kMiB);
  ASSERT_TRUE(upstream->status().ok()) << upstream->status();
  VmmSubAllocator* vmm = upstream.get();
  auto allocator = MakeBfcOver(std::move(upstream), "tight");
  HoleScenario scenario(*allocator);
  ASSERT_NE(scenario.third, nullptr);
  EXPECT_EQ(vmm->committed_bytes(), PoolBytes(*allocator));
  allocator->Deallocate(scenario.second);
  void* reused = allocator->Allocate(5 * kMiB);
  ASSERT_EQ(reused, scenario.first);
  // Recommitted pages are writable again.
  std::memset(reused, 0x5a, 5 * kMiB);
  std::memset(scenario.third, 0xa5, 6 * kMiB);
  EXPECT_EQ(static_cast<unsigned char*>(reused)[5 * kMiB - 1], 0x5a);
  EXPECT_EQ(vmm->committed_bytes(), PoolBytes(*allocator));
  EXPECT_TRUE(allocator->CheckInvariants().ok());
}

TEST(SubAllocatorDecommit, RefusesRangesThatAreNotCommittedMemory) {
  SimulatedSubAllocator upstream(64 * kMiB, /*coalescing=*/true);
  size_t received = 0;
  char* region = static_cast<char*>(upstream.Alloc(8 * kMiB, 256, &received));
  ASSERT_NE(region, nullptr);
  EXPECT_FALSE(upstream.Recommit(region, kMiB));  // not decommitted
  EXPECT_FALSE(upstream.Decommit(region + 7 * kMiB, 2 * kMiB));  // past the end
  EXPECT_FALSE(upstream.Decommit(region + 100, kMiB));           // unaligned
  EXPECT_EQ(upstream.misuse_count(), 2);
  ASSERT_TRUE(upstream.Decommit(region + kMiB, 2 * kMiB));
  EXPECT_FALSE(upstream.Decommit(region + 2 * kMiB, 2 * kMiB));  // overlaps
  EXPECT_EQ(upstream.bytes_in_use(), 6 * kMiB);
  ASSERT_TRUE(upstream.Recommit(region + 2 * kMiB, kMiB));  // the top half
  EXPECT_EQ(upstream.bytes_in_use(), 7 * kMiB);
  EXPECT_FALSE(upstream.Recommit(region + 2 * kMiB, kMiB));  // again
  // Freeing the region forgets what was decommitted in it.
  upstream.Free(region, received);
  EXPECT_EQ(upstream.bytes_in_use(), 0u);
  region = static_cast<char*>(upstream.Alloc(8 * kMiB, 256, &received));
  ASSERT_NE(region, nullptr);
  EXPECT_TRUE(upstream.Decommit(region + kMiB, kMiB));
  EXPECT_EQ(upstream.misuse_count(), 4);
  upstream.Free(region, received);
}

}  // namespace
}  // namespace tensormem
