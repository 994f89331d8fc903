// BfcAllocator::AddRegion and AllocateAt: a recorded state rebuilt (a replay
// that starts where a recording began), under the pytorch policy's pools and
// split rules; KeepOnly: a block cut into the parts that stay.
#include <string>
#include <vector>

#include "alloc/policy_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
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

char* At(void* base, uint64_t offset) {
  return static_cast<char*>(base) + offset;
}

TEST(BfcRebuildTest, AddRegionTakesExactlyTheBytesAndServesNothing) {
  auto bfc = MakePolicyBfc("pytorch", "", 1 * kGiB, /*coalescing=*/false);
  // 30 MiB for the large pool: no request size would make that segment.
  ASSERT_TRUE(bfc->AddRegion(30 * kMiB, 2 * kMiB));
  ASSERT_TRUE(bfc->AddRegion(2 * kMiB, 1));  // a small-pool segment
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(30 * kMiB, 2 * kMiB));
  EXPECT_EQ(bfc->GetStats()->bytes_in_use, 0u);
  EXPECT_EQ(bfc->GetStats()->pool_bytes, 32 * kMiB);
  // A small request is served by the small segment, not the large one.
  void* small = bfc->Allocate(1000);
  EXPECT_THAT(ChunkLayout(*bfc, 1), ElementsAre("1024", Free(2 * kMiB - 1024)));
  EXPECT_FALSE(bfc->AddRegion(1 * kGiB, 2 * kMiB));  // over the limit
  bfc->Deallocate(small);
}

TEST(BfcRebuildTest, AllocateAtCutsBeforeTheBlockAndAfterItAsTheSplitRuleSays) {
  auto bfc = MakePolicyBfc("pytorch", "", 1 * kGiB, /*coalescing=*/false);
  ASSERT_TRUE(bfc->AddRegion(20 * kMiB, 2 * kMiB));
  void* base =
      reinterpret_cast<void*>(bfc->RecordMemoryDump().regions[0].address);
  // Highest first: a block 512 KiB short of the end keeps that remainder
  // (not more than 1 MiB), then one at 4 MiB is cut after its 2 MiB.
  void* high = bfc->AllocateAt(At(base, 16 * kMiB), 7 * kMiB / 2);
  void* low = bfc->AllocateAt(At(base, 4 * kMiB), 2 * kMiB);
  ASSERT_NE(high, nullptr);
  ASSERT_NE(low, nullptr);
  EXPECT_EQ(high, At(base, 16 * kMiB));
  EXPECT_THAT(ChunkLayout(*bfc, 0),
              ElementsAre(Free(4 * kMiB), Bytes(2 * kMiB), Free(10 * kMiB),
                          Bytes(4 * kMiB)));
  EXPECT_EQ(bfc->RequestedSize(high), 7 * kMiB / 2);
  // Inside a block, or past the free chunk's end: refused.
  EXPECT_EQ(bfc->AllocateAt(At(base, 5 * kMiB), 512), nullptr);
  EXPECT_EQ(bfc->AllocateAt(At(base, 3 * kMiB), 2 * kMiB), nullptr);
  for (void* p : {high, low}) bfc->Deallocate(p);
  EXPECT_THAT(ChunkLayout(*bfc, 0), ElementsAre(Free(20 * kMiB)));
  EXPECT_TRUE(InvariantsHold(*bfc));
}

TEST(BfcRebuildTest, KeepOnlyFreesABlockButForItsParts) {
  auto bfc = MakePolicyBfc("tight", "", 1 * kGiB, /*coalescing=*/true);
  void* before = bfc->Allocate(1 * kMiB);
  void* block = bfc->Allocate(4 * kMiB);
  void* after = bfc->Allocate(1 * kMiB);
  const bfc::KeptPart parts[] = {
      {.offset = 1 * kMiB, .bytes = 256 * kKiB, .requested = 200 * kKiB},
      {.offset = 3 * kMiB, .bytes = 1 * kMiB, .requested = 1 * kMiB}};
  ASSERT_TRUE(bfc->KeepOnly(block, parts));
  std::vector<std::string> layout = ChunkLayout(*bfc, 0);
  layout.resize(6);  // then the region's free tail, if any
  EXPECT_THAT(layout, ElementsAre(Bytes(1 * kMiB), Free(1 * kMiB),
                                  Bytes(256 * kKiB), Free(7 * kMiB / 4),
                                  Bytes(1 * kMiB), Bytes(1 * kMiB)));
  void* first = At(block, 1 * kMiB);
  void* second = At(block, 3 * kMiB);
  EXPECT_EQ(bfc->RequestedSize(first), 200 * kKiB);
  EXPECT_EQ(bfc->AllocatedSize(second), 1 * kMiB);
  // before, the two parts, after.
  EXPECT_EQ(bfc->GetStats()->bytes_in_use, 3 * kMiB + 256 * kKiB);
  // The block itself is gone; the gaps serve requests.
  EXPECT_FALSE(bfc->CheckedDeallocate(block).ok());
  EXPECT_EQ(bfc->Allocate(1 * kMiB), block);
  EXPECT_TRUE(InvariantsHold(*bfc));
  for (void* p : {before, block, first, second, after}) bfc->Deallocate(p);
  EXPECT_EQ(bfc->GetStats()->bytes_in_use, 0u);
  EXPECT_TRUE(InvariantsHold(*bfc));
}

TEST(BfcRebuildTest, KeepOnlyRefusesPartsThatDoNotFitAndChangesNothing) {
  auto bfc = MakePolicyBfc("tight", "", 1 * kGiB, /*coalescing=*/true);
  void* block = bfc->Allocate(4 * kMiB);
  const std::vector<std::string> layout = ChunkLayout(*bfc, 0);
  using Parts = std::vector<bfc::KeptPart>;
  const Parts refused[] = {
      {{.offset = 2 * kMiB, .bytes = 4 * kMiB}},        // past the end
      {{.offset = 100, .bytes = 256}},                  // misaligned
      {{.offset = 0, .bytes = 0}},                      // empty
      {{.offset = 0, .bytes = 256, .requested = 512}},  // request too large
      {{.offset = 1 * kMiB, .bytes = 1 * kMiB},
       {.offset = 1 * kMiB + 256 * kKiB, .bytes = 256}},  // overlapping
      {{.offset = 2 * kMiB, .bytes = 256}, {.offset = 0, .bytes = 256}}};
  for (const Parts& parts : refused) EXPECT_FALSE(bfc->KeepOnly(block, parts));
  const Parts one = {{.offset = 0, .bytes = 256}};
  EXPECT_FALSE(bfc->KeepOnly(At(block, 256), one));       // inside the block
  EXPECT_FALSE(bfc->KeepOnly(At(block, 8 * kMiB), one));  // no block there
  EXPECT_EQ(ChunkLayout(*bfc, 0), layout);
  EXPECT_EQ(bfc->GetStats()->bytes_in_use, 4 * kMiB);
  // No parts: the whole block is freed.
  EXPECT_TRUE(bfc->KeepOnly(block, {}));
  EXPECT_EQ(bfc->GetStats()->bytes_in_use, 0u);
  EXPECT_TRUE(InvariantsHold(*bfc));
}

}  // namespace
}  // namespace tensormem
