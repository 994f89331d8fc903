// The pytorch policy's documented rules, pinned with numbers, through the BFC
// engine over a simulated upstream (regions are PyTorch's segments).
#include <memory>
#include <string>
#include <vector>

#include "alloc/policy_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using testing::Bytes;
using testing::ChunkLayout;
using ::testing::ElementsAre;
using testing::Free;
using ::testing::HasSubstr;
using testing::InvariantsHold;
using testing::MakePolicyBfc;
using testing::RegionSizes;

using testing::Pytorch;
using testing::PytorchRounded;

TEST(PytorchPolicyTest, SmallRequestGetsA2MiBSegmentAnd1024ByteBlock) {
  auto bfc = Pytorch();
  void* p = bfc->AllocateRaw(1, 1000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(bfc->AllocatedSize(p), 1024u);
  EXPECT_EQ(bfc->RequestedSize(p), 1000u);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(2 * kMiB));
  EXPECT_THAT(ChunkLayout(*bfc, 0), ElementsAre("1024", Free(2 * kMiB - 1024)));
  EXPECT_EQ(bfc->GetStats()->pool_bytes, 2 * kMiB);
  bfc->Deallocate(p);
  EXPECT_TRUE(InvariantsHold(*bfc));
}

TEST(PytorchPolicyTest, MidSizeRequestGetsA20MiBSegment) {
  auto bfc = Pytorch();
  void* p = bfc->AllocateRaw(1, 3 * kMiB / 2);
  ASSERT_NE(p, nullptr);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(20 * kMiB));
  EXPECT_THAT(ChunkLayout(*bfc, 0),
              ElementsAre(Bytes(3 * kMiB / 2), Free(37 * kMiB / 2)));
  bfc->Deallocate(p);
}

TEST(PytorchPolicyTest, LargeRequestGetsASegmentRoundedTo2MiB) {
  auto bfc = Pytorch();
  void* p = bfc->AllocateRaw(1, 11 * kMiB);
  ASSERT_NE(p, nullptr);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(12 * kMiB));
  // The 1 MiB remainder is not more than 1 MiB: the block keeps it.
  EXPECT_THAT(ChunkLayout(*bfc, 0), ElementsAre(Bytes(12 * kMiB)));
  EXPECT_EQ(bfc->AllocatedSize(p), 12 * kMiB);
  bfc->Deallocate(p);
}

TEST(PytorchPolicyTest, RoundsTo512ByteMultiples) {
  EXPECT_EQ(PytorchRounded("", 1), 512u);
  EXPECT_EQ(PytorchRounded("", 512), 512u);
  EXPECT_EQ(PytorchRounded("", 513), 1024u);
  EXPECT_EQ(PytorchRounded("", 1000), 1024u);
  EXPECT_EQ(PytorchRounded("", 9000), 9216u);
  EXPECT_EQ(PytorchRounded("", 11 * kMiB + 1), 11 * kMiB + 512);
}

TEST(PytorchPolicyTest, RoundupPower2DivisionsSingleValue) {
  const char* config = "roundup_power2_divisions:4";
  EXPECT_EQ(PytorchRounded(config, 9000), 10240u);
  EXPECT_EQ(PytorchRounded(config, 8192), 8192u);  // powers of two stay
  EXPECT_EQ(PytorchRounded(config, 2048),
            2048u);  // up to 512 x 4: plain rounding
  EXPECT_EQ(PytorchRounded(config, 2049), 2560u);
  EXPECT_EQ(PytorchRounded(config, 5 * kMiB), 5 * kMiB);
  EXPECT_EQ(PytorchRounded(config, 5 * kMiB + 1), 6 * kMiB);
  // Through the allocator: the block has the rounded size.
  auto bfc = Pytorch(config);
  void* p = bfc->AllocateRaw(1, 9000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(bfc->AllocatedSize(p), 10240u);
  bfc->Deallocate(p);
}

TEST(PytorchPolicyTest, RoundupPower2DivisionsPerInterval) {
  const char* config = "roundup_power2_divisions:[256:1,512:2,>:8]";
  // Below 256 MiB the first value (1: plain 512-byte rounding) applies.
  EXPECT_EQ(PytorchRounded(config, 9000), 9216u);
  EXPECT_EQ(PytorchRounded(config, 300 * kMiB + 1), 300 * kMiB + 512);
  // [512 MiB, 1 GiB): halves.
  EXPECT_EQ(PytorchRounded(config, 600 * kMiB), 768 * kMiB);
  // From 1 GiB on: eighths.
  EXPECT_EQ(PytorchRounded(config, 1 * kGiB + 1), 1152 * kMiB);
  EXPECT_EQ(PytorchRounded(config, 3 * kGiB + 1), 3 * kGiB + 256 * kMiB);
  // Intervals not named after the first value are left without divisions.
  const char* partial = "roundup_power2_divisions:[2:4]";
  EXPECT_EQ(PytorchRounded(partial, 9000), 10240u);
  EXPECT_EQ(PytorchRounded(partial, 2 * kMiB + 1), 5 * kMiB / 2);
  EXPECT_EQ(PytorchRounded(partial, 4 * kMiB + 1), 4 * kMiB + 512);
}

TEST(PytorchPolicyTest, SmallPoolSplitsRemaindersOf512Bytes) {
  auto bfc = Pytorch();
  void* a = bfc->AllocateRaw(1, 1 * kMiB);
  void* b = bfc->AllocateRaw(1, 1 * kMiB - 512);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(2 * kMiB));
  EXPECT_THAT(ChunkLayout(*bfc, 0),
              ElementsAre(Bytes(kMiB), Bytes(kMiB - 512), Free(512)));
  // The 512-byte remainder serves the next small request exactly.
  void* c = bfc->AllocateRaw(1, 100);
  EXPECT_EQ(c, static_cast<char*>(b) + kMiB - 512);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(2 * kMiB));
  for (void* p : {a, b, c}) bfc->Deallocate(p);
  EXPECT_TRUE(InvariantsHold(*bfc));
}

TEST(PytorchPolicyTest, LargePoolSplitsOnlyRemaindersAbove1MiB) {
  auto exact = Pytorch();
  void* a = exact->AllocateRaw(1, 3 * kMiB / 2);
  // 18.5 MiB free; 17.5 MiB leaves exactly 1 MiB: not split.
  void* b = exact->AllocateRaw(1, 35 * kMiB / 2);
  ASSERT_NE(b, nullptr);
  EXPECT_THAT(ChunkLayout(*exact, 0),
              ElementsAre(Bytes(3 * kMiB / 2), Bytes(37 * kMiB / 2)));
  EXPECT_EQ(exact->AllocatedSize(b), 37 * kMiB / 2);
  for (void* p : {a, b}) exact->Deallocate(p);

  auto over = Pytorch();
  void* c = over->AllocateRaw(1, 3 * kMiB / 2);
  void* d = over->AllocateRaw(1, 35 * kMiB / 2 - 512);  // leaves 1 MiB + 512
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(ChunkLayout(*over, 0),
              ElementsAre(Bytes(3 * kMiB / 2), Bytes(35 * kMiB / 2 - 512),
                          Free(kMiB + 512)));
  for (void* p : {c, d}) over->Deallocate(p);
}

TEST(PytorchPolicyTest, SmallAndLargePoolsNeverShareSegments) {
  auto bfc = Pytorch("", 1 * kGiB, /*coalescing=*/true);
  void* small = bfc->AllocateRaw(1, 1000);
  bfc->Deallocate(small);
  // The free 2 MiB small segment could hold 1.5 MiB, but it is the small
  // pool's: a 20 MiB segment is made.
  void* large = bfc->AllocateRaw(1, 3 * kMiB / 2);
  ASSERT_NE(large, nullptr);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(2 * kMiB, 20 * kMiB));
  // And the other way round: 18.5 MiB are free in the large segment.
  void* small_again = bfc->AllocateRaw(1, 1000);
  EXPECT_EQ(small_again, small);
  void* second_small = bfc->AllocateRaw(1, kMiB);  // 1 MiB - 1 KiB left
  ASSERT_NE(second_small, nullptr);
  void* third_small = bfc->AllocateRaw(1, kMiB);
  ASSERT_NE(third_small, nullptr);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(2 * kMiB, 20 * kMiB, 2 * kMiB));
  for (void* p : {large, small_again, second_small, third_small})
    bfc->Deallocate(p);
  EXPECT_TRUE(InvariantsHold(*bfc));
}

TEST(PytorchPolicyTest, OversizeBlocksAreNeverSplitNorTakenBySmallerRequests) {
  auto bfc = Pytorch("max_split_size_mb:32");
  void* big = bfc->AllocateRaw(1, 40 * kMiB);
  ASSERT_NE(big, nullptr);
  bfc->Deallocate(big);  // a cached 40 MiB block, oversize
  // 25 MiB is below the split limit: the oversize block may not serve it.
  void* mid = bfc->AllocateRaw(1, 25 * kMiB);
  ASSERT_NE(mid, nullptr);
  EXPECT_NE(mid, big);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(40 * kMiB, 26 * kMiB));
  // 36 MiB is oversize and within 20 MiB of the block: served, not split.
  void* oversize = bfc->AllocateRaw(1, 36 * kMiB);
  EXPECT_EQ(oversize, big);
  EXPECT_EQ(bfc->AllocatedSize(oversize), 40 * kMiB);
  EXPECT_THAT(ChunkLayout(*bfc, 0), ElementsAre(Bytes(40 * kMiB)));
  for (void* p : {mid, oversize}) bfc->Deallocate(p);
  EXPECT_TRUE(InvariantsHold(*bfc));
}

TEST(PytorchPolicyTest, MaxNonSplitRoundingBoundsTheWasteOfOversizeBlocks) {
  auto bfc = Pytorch("max_split_size_mb:32,max_non_split_rounding_mb:2");
  void* big = bfc->AllocateRaw(1, 40 * kMiB);
  bfc->Deallocate(big);
  // 40 - 36 = 4 MiB of waste is not below 2 MiB: a new segment.
  void* p = bfc->AllocateRaw(1, 36 * kMiB);
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p, big);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(40 * kMiB, 36 * kMiB));
  // 39 MiB wastes 1 MiB: served by the cached block.
  void* q = bfc->AllocateRaw(1, 39 * kMiB);
  EXPECT_EQ(q, big);
  for (void* r : {p, q}) bfc->Deallocate(r);
}

TEST(PytorchPolicyTest, ExpandableSegmentsGrowOneSegmentPerPoolInPages) {
  auto bfc = Pytorch("expandable_segments:True", 1 * kGiB,
                     /*coalescing=*/true);
  // Small pool: 2 MiB pages, contiguous.
  void* a = bfc->AllocateRaw(1, kMiB);
  void* b = bfc->AllocateRaw(1, kMiB);
  void* c = bfc->AllocateRaw(1, kMiB);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c, static_cast<char*>(b) + kMiB);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(4 * kMiB));
  // Large pool: its own segment, grown by 20 MiB pages by what it lacks.
  void* d = bfc->AllocateRaw(1, 3 * kMiB / 2);
  void* e = bfc->AllocateRaw(1, 19 * kMiB);  // 18.5 MiB free at the tail
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e, static_cast<char*>(d) + 3 * kMiB / 2);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(4 * kMiB, 40 * kMiB));
  EXPECT_EQ(bfc->GetStats()->pool_bytes, 44 * kMiB);
  // Emptying the cache unmaps the free trailing pages.
  bfc->Deallocate(e);
  bfc->Deallocate(c);
  EXPECT_TRUE(bfc->ReleaseFreeRegions());
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(2 * kMiB, 20 * kMiB));
  EXPECT_EQ(bfc->GetStats()->pool_bytes, 22 * kMiB);
  for (void* p : {a, b, d}) bfc->Deallocate(p);
  EXPECT_TRUE(InvariantsHold(*bfc));
}

TEST(PytorchPolicyTest, ExpandableSegmentsNeedACoalescingUpstream) {
  PolicyEnvironment environment{.memory_limit = kGiB};
  environment.upstream_coalesces = false;
  absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy =
      CreatePolicy("pytorch", environment, "expandable_segments:True");
  ASSERT_FALSE(policy.ok());
  EXPECT_THAT(policy.status().message(), HasSubstr("expandable_segments"));
  EXPECT_THAT(policy.status().message(), HasSubstr("vmm"));
  environment.upstream_coalesces = true;
  EXPECT_TRUE(
      CreatePolicy("pytorch", environment, "expandable_segments:True").ok());
  EXPECT_TRUE(CreatePolicy("pytorch", {.memory_limit = kGiB},
                           "expandable_segments:False")
                  .ok());
}

TEST(PytorchPolicyTest, ExpandableSegmentsReturnUnmappedPagesOnOutOfMemory) {
  auto bfc = Pytorch("expandable_segments:True", 41 * kMiB,
                     /*coalescing=*/true);
  void* d = bfc->AllocateRaw(1, 3 * kMiB / 2);
  void* e = bfc->AllocateRaw(1, 19 * kMiB);
  ASSERT_NE(e, nullptr);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(40 * kMiB));
  bfc->Deallocate(e);
  // A 2 MiB small page does not fit under the limit until the free second
  // large page goes back.
  void* small = bfc->AllocateRaw(1, 1000);
  ASSERT_NE(small, nullptr) << bfc->LastFailureReport();
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(20 * kMiB, 2 * kMiB));
  EXPECT_EQ(bfc->RequestedSize(d), 3 * kMiB / 2);
  for (void* p : {d, small}) bfc->Deallocate(p);
  EXPECT_TRUE(InvariantsHold(*bfc));
}

TEST(PytorchPolicyTest, OutOfMemoryFreesCachedSegmentsRetriesThenFails) {
  auto bfc = Pytorch("", 64 * kMiB);
  void* small = bfc->AllocateRaw(1, 1000);
  void* cached = bfc->AllocateRaw(1, 30 * kMiB);
  void* kept = bfc->AllocateRaw(1, 12 * kMiB);
  ASSERT_NE(kept, nullptr);
  bfc->Deallocate(cached);
  // 44 MiB reserved; 40 MiB fits only once the cached 30 MiB segment goes.
  void* big = bfc->AllocateRaw(1, 40 * kMiB);
  ASSERT_NE(big, nullptr) << bfc->LastFailureReport();
  EXPECT_EQ(bfc->GetStats()->pool_bytes, 54 * kMiB);
  EXPECT_EQ(RegionSizes(*bfc).size(), 3u);
  const AllocatorStats before = *bfc->GetStats();
  // Nothing left to free: 30 MiB fails, and nothing allocated is lost.
  EXPECT_EQ(bfc->AllocateRaw(1, 30 * kMiB), nullptr);
  EXPECT_THAT(bfc->LastFailureReport(), HasSubstr("out of memory"));
  const AllocatorStats after = *bfc->GetStats();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(after.pool_bytes, before.pool_bytes);
  EXPECT_EQ(bfc->RequestedSize(small), 1000u);
  EXPECT_EQ(bfc->RequestedSize(kept), 12 * kMiB);
  EXPECT_EQ(bfc->RequestedSize(big), 40 * kMiB);
  EXPECT_TRUE(InvariantsHold(*bfc));
  for (void* p : {small, kept, big}) bfc->Deallocate(p);
}

TEST(PytorchPolicyTest, ASegmentIsAllOrNothingUnderTheLimit) {
  auto bfc = Pytorch("", 30 * kMiB);
  void* big = bfc->AllocateRaw(1, 12 * kMiB);
  ASSERT_NE(big, nullptr);
  // 1.5 MiB needs a 20 MiB segment; only 18 MiB are left under the limit.
  EXPECT_EQ(bfc->AllocateRaw(1, 3 * kMiB / 2), nullptr);
  EXPECT_THAT(bfc->LastFailureReport(), HasSubstr("out of memory"));
  // A small request's 2 MiB segment still fits.
  void* small = bfc->AllocateRaw(1, 1000);
  ASSERT_NE(small, nullptr);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(12 * kMiB, 2 * kMiB));
  // Once the 12 MiB block is cached and free, it serves the request, split.
  bfc->Deallocate(big);
  void* mid = bfc->AllocateRaw(1, 3 * kMiB / 2);
  EXPECT_EQ(mid, big);
  EXPECT_THAT(ChunkLayout(*bfc, 0),
              ElementsAre(Bytes(3 * kMiB / 2), Free(21 * kMiB / 2)));
  EXPECT_EQ(bfc->GetStats()->pool_bytes, 14 * kMiB);
  for (void* p : {small, mid}) bfc->Deallocate(p);
  EXPECT_TRUE(InvariantsHold(*bfc));
}

struct BadConfig {
  const char* config;
  const char* names;    // the key or entry the error must name
  const char* accepts;  // what it must say is accepted
};

TEST(PytorchPolicyTest, BadConfigurationsNameTheKeyAndWhatItAccepts) {
  const BadConfig cases[] = {
      {"max_split_size_mb:20", "max_split_size_mb", ">= 21"},
      {"max_split_size_mb:abc", "max_split_size_mb", "MiB"},
      {"max_non_split_rounding_mb:-1", "max_non_split_rounding_mb", "MiB"},
      {"roundup_power2_divisions:3", "roundup_power2_divisions",
       "power of two"},
      {"roundup_power2_divisions:[256:1,128:2]", "roundup_power2_divisions",
       "increasing"},
      {"roundup_power2_divisions:[300:1]", "roundup_power2_divisions",
       "powers of two"},
      {"roundup_power2_divisions:[256:3]", "roundup_power2_divisions",
       "power of two"},
      {"roundup_power2_divisions:[256:1", "roundup_power2_divisions",
       "key:value"},
      {"garbage_collection_threshold:1.0", "garbage_collection_threshold",
       "between 0 and 1"},
      {"garbage_collection_threshold:0", "garbage_collection_threshold",
       "between 0 and 1"},
      {"expandable_segments:yes", "expandable_segments", "True or False"},
      {"backend:cudaMallocAsync", "backend", "native"},
      {"max_split_size:64", "max_split_size", "known: max_split_size_mb"},
      {"max_split_size_mb", "max_split_size_mb", "key:value"},
  };
  for (const BadConfig& bad : cases) {
    absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy =
        CreatePolicy("pytorch", {.memory_limit = kGiB}, bad.config);
    ASSERT_FALSE(policy.ok()) << bad.config;
    EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(policy.status().message(), HasSubstr(bad.names)) << bad.config;
    EXPECT_THAT(policy.status().message(), HasSubstr(bad.accepts))
        << bad.config;
  }
}

TEST(PytorchPolicyTest, GoodConfigurationsAreDescribed) {
  absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy = CreatePolicy(
      "pytorch", {.memory_limit = kGiB},
      "max_split_size_mb:512, roundup_power2_divisions:[256:1,>:4],"
      "garbage_collection_threshold:0.8,backend:native");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ((*policy)->Describe(),
            "pytorch(max_split_size_mb:512,roundup_power2_divisions:[256:1,>:"
            "4],garbage_collection_threshold:0.8,backend:native)");
  EXPECT_EQ((*policy)->NumPools(), 2);
  EXPECT_EQ((*policy)->PoolFor(kMiB), 0);
  EXPECT_EQ((*policy)->PoolFor(kMiB + 512), 1);
  EXPECT_EQ((*CreatePolicy("pytorch", {.memory_limit = kGiB}))->Describe(),
            "pytorch");
}

}  // namespace
}  // namespace tensormem
