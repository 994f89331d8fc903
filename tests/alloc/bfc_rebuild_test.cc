// BfcAllocator::AddRegion and AllocateAt: a recorded state rebuilt (a replay
// that starts where a recording began), under the pytorch policy's pools and
// split rules.
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

}  // namespace
}  // namespace tensormem
