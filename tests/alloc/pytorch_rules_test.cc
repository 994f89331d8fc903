// Rules of PyTorch's caching allocator that real recordings showed the
// pytorch policy must follow (docs/pytorch.md, "Replaying snapshots"), one
// test each, with numbers.
#include <memory>
#include <string>

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
using testing::InvariantsHold;
using testing::MakePolicyBfc;
using testing::RegionSizes;

using testing::Pytorch;
using testing::PytorchRounded;

TEST(PytorchRulesTest, OneDivisionIsNoDivisionAndSmallSizesKeep512Bytes) {
  EXPECT_EQ(PytorchRounded("roundup_power2_divisions:1", 9000), 9216u);
  // Divisions apply only above 512 bytes x divisions.
  EXPECT_EQ(PytorchRounded("roundup_power2_divisions:4", 1500), 1536u);
  EXPECT_EQ(PytorchRounded("roundup_power2_divisions:4", 2100), 2560u);
  // The interval of a size is floor(log2 size) - 20: 3 MiB is in the
  // [2 MiB, 4 MiB) interval, keyed 2.
  EXPECT_EQ(
      PytorchRounded("roundup_power2_divisions:[1:1,2:2,>:1]", 3 * kMiB + 1),
      4 * kMiB);
  EXPECT_EQ(PytorchRounded("roundup_power2_divisions:[1:1,2:2,>:1]", kMiB + 1),
            kMiB + 512);
}

TEST(PytorchRulesTest, ANewSegmentServesTheRequestThatMadeIt) {
  // 127.5 MiB is below max_split_size; its 128 MiB segment is not, and no
  // cached block that size may serve it, but the segment made for it does.
  auto bfc = Pytorch("max_split_size_mb:128");
  void* p = bfc->AllocateRaw(1, 255 * kMiB / 2);
  ASSERT_NE(p, nullptr) << bfc->LastFailureReport();
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(128 * kMiB));
  EXPECT_EQ(bfc->AllocatedSize(p), 128 * kMiB);  // 0.5 MiB is not split off
  bfc->Deallocate(p);
  // Cached, the oversize block serves no request below max_split_size.
  void* q = bfc->AllocateRaw(1, 255 * kMiB / 2);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(128 * kMiB, 128 * kMiB));
  bfc->Deallocate(q);
  EXPECT_TRUE(InvariantsHold(*bfc));
}

TEST(PytorchRulesTest, ExpandableSegmentsSplitEveryRemainder) {
  const uint64_t request = 20 * kMiB - 4096;
  auto plain = Pytorch("");
  void* p = plain->AllocateRaw(1, request);
  EXPECT_THAT(ChunkLayout(*plain, 0), ElementsAre(Bytes(20 * kMiB)));
  auto expandable =
      Pytorch("expandable_segments:True", 1 * kGiB, /*coalescing=*/true);
  void* q = expandable->AllocateRaw(1, request);
  EXPECT_THAT(ChunkLayout(*expandable, 0),
              ElementsAre(Bytes(request), Free(4096)));
  plain->Deallocate(p);
  expandable->Deallocate(q);
}

TEST(PytorchRulesTest, ExpandableSegmentsPassOverTheFreeTail) {
  auto bfc = Pytorch("expandable_segments:True", 1 * kGiB, /*coalescing=*/true);
  void* a = bfc->AllocateRaw(1, 4 * kMiB);
  void* b = bfc->AllocateRaw(1, 8 * kMiB);
  void* c = bfc->AllocateRaw(1, 4 * kMiB);
  ASSERT_NE(c, nullptr);
  bfc->Deallocate(b);  // an 8 MiB hole; 4 MiB free at the page's end
  // The tail is the best fit, but it can grow for this request later: the
  // larger hole serves.
  void* d = bfc->AllocateRaw(1, 3 * kMiB);
  EXPECT_EQ(d, b);
  EXPECT_THAT(ChunkLayout(*bfc, 0),
              ElementsAre(Bytes(4 * kMiB), Bytes(3 * kMiB), Free(5 * kMiB),
                          Bytes(4 * kMiB), Free(4 * kMiB)));
  for (void* p : {a, c, d}) bfc->Deallocate(p);
  EXPECT_TRUE(InvariantsHold(*bfc));
}

TEST(PytorchRulesTest, GarbageCollectionActsOnlyAboveTheThreshold) {
  // Threshold 50 MiB of a 100 MiB limit, checked against reserved bytes
  // before a new segment is made.
  auto bfc = Pytorch("garbage_collection_threshold:0.5", 100 * kMiB);
  bfc->Deallocate(bfc->AllocateRaw(1, 12 * kMiB));  // cached
  void* b = bfc->AllocateRaw(1, 14 * kMiB);         // 12 reserved: kept
  void* c = bfc->AllocateRaw(1, 30 * kMiB);         // 26 reserved: kept
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(12 * kMiB, 14 * kMiB, 30 * kMiB));
  void* d = bfc->AllocateRaw(1, 16 * kMiB);  // 56 reserved: collected
  ASSERT_NE(d, nullptr);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(14 * kMiB, 30 * kMiB, 16 * kMiB));
  EXPECT_EQ(bfc->GetStats()->pool_bytes, 60 * kMiB);
  for (void* p : {b, c, d}) bfc->Deallocate(p);
}

TEST(PytorchRulesTest, GarbageCollectionReleasesTheLongestUnusedFirst) {
  auto bfc = Pytorch("garbage_collection_threshold:0.3", 100 * kMiB);
  void* x = bfc->AllocateRaw(1, 12 * kMiB);
  void* y = bfc->AllocateRaw(1, 14 * kMiB);
  void* w = bfc->AllocateRaw(1, 16 * kMiB);
  bfc->Deallocate(x);
  bfc->Deallocate(y);
  bfc->Deallocate(bfc->AllocateRaw(1, 14 * kMiB));  // y used again
  // 42 MiB reserved, 12 over the threshold: x, unused for two requests
  // (the average age is 1.5), goes; y, unused for one, stays.
  void* m = bfc->AllocateRaw(1, 20 * kMiB);
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(14 * kMiB, 16 * kMiB, 20 * kMiB));
  for (void* p : {w, m}) bfc->Deallocate(p);
  EXPECT_TRUE(InvariantsHold(*bfc));
}

TEST(PytorchRulesTest, GarbageCollectionNeedsAMemoryLimit) {
  // Without a limit (a memory fraction, in PyTorch) the threshold is a
  // fraction of the whole simulated device: nothing is collected.
  auto bfc = Pytorch("garbage_collection_threshold:0.5", 1 * kTiB);
  bfc->Deallocate(bfc->AllocateRaw(1, 12 * kMiB));
  void* b = bfc->AllocateRaw(1, 14 * kMiB);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(12 * kMiB, 14 * kMiB));
  bfc->Deallocate(b);
}

TEST(PytorchRulesTest, ReservedActiveAndInactiveSplitCountAsPyTorchCounts) {
  auto bfc = Pytorch("");
  void* small = bfc->AllocateRaw(1, 1000);
  void* large = bfc->AllocateRaw(1, 11 * kMiB);  // its whole 12 MiB segment
  AllocatorStats stats = *bfc->GetStats();
  EXPECT_EQ(stats.pool_bytes, 14 * kMiB);              // reserved: segments
  EXPECT_EQ(stats.bytes_in_use, 1024 + 12 * kMiB);     // active: blocks
  EXPECT_EQ(stats.bytes_requested, 1000 + 11 * kMiB);  // requested
  // Inactive split: free blocks of segments that are split, here the rest
  // of the small segment; an unsplit segment has none.
  EXPECT_EQ(stats.inactive_split_bytes, 2 * kMiB - 1024);
  EXPECT_EQ(stats.num_regions, 2);
  bfc->Deallocate(small);
  bfc->Deallocate(large);
  // Whole free segments stay reserved and are not inactive splits.
  stats = *bfc->GetStats();
  EXPECT_EQ(stats.pool_bytes, 14 * kMiB);
  EXPECT_EQ(stats.bytes_in_use, 0u);
  EXPECT_EQ(stats.inactive_split_bytes, 0u);
}

TEST(PytorchRulesTest, OutOfMemoryFirstReleasesOversizeBlocksEnough) {
  auto bfc = Pytorch("max_split_size_mb:128", 400 * kMiB);
  void* a = bfc->AllocateRaw(1, 150 * kMiB);
  void* b = bfc->AllocateRaw(1, 200 * kMiB);
  bfc->Deallocate(a);
  bfc->Deallocate(b);  // 350 MiB cached in two oversize segments
  // 60 MiB may not take an oversize block and does not fit beside them:
  // the smallest oversize segment of at least 128 MiB goes, the other
  // stays, and this is no retry yet.
  void* c = bfc->AllocateRaw(1, 60 * kMiB);
  ASSERT_NE(c, nullptr) << bfc->LastFailureReport();
  EXPECT_THAT(RegionSizes(*bfc),
              ::testing::UnorderedElementsAre(200 * kMiB, 60 * kMiB));
  EXPECT_EQ(bfc->GetStats()->num_alloc_retries, 0);
  bfc->Deallocate(c);
}

TEST(PytorchRulesTest, OutOfMemoryAlwaysReleasesAndRetriesOnce) {
  auto bfc = Pytorch("", 64 * kMiB);
  void* kept = bfc->AllocateRaw(1, 40 * kMiB);
  bfc->Deallocate(bfc->AllocateRaw(1, 12 * kMiB));  // cached
  // 52 MiB reserved; 26 MiB more does not fit even once the cached 12 MiB
  // go back, and PyTorch releases them and retries anyway.
  EXPECT_EQ(bfc->AllocateRaw(1, 26 * kMiB), nullptr);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(40 * kMiB));
  EXPECT_EQ(bfc->GetStats()->num_alloc_retries, 1);
  // Nothing cached left: the release frees nothing, the retry still counts.
  EXPECT_EQ(bfc->AllocateRaw(1, 30 * kMiB), nullptr);
  EXPECT_EQ(bfc->GetStats()->num_alloc_retries, 2);
  bfc->Deallocate(kept);
}

}  // namespace
}  // namespace tensormem
