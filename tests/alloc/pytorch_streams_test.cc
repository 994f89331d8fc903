// Streams under the pytorch policy: a block is reused only by the stream it
// was allocated on, each stream has its own segments (and, with expandable
// segments, its own growing segment per pool), and the out-of-memory path
// frees cached segments of every stream. Policies that do not keep streams
// apart ignore the stream.
#include <memory>
#include <string>
#include <vector>

#include "alloc/policy_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using ::testing::ElementsAre;
using testing::InvariantsHold;
using testing::MakePolicyBfc;
using testing::RegionSizes;

void* OnStream(BfcAllocator& bfc, size_t bytes, int32_t stream) {
  return bfc.Allocate(bytes, Allocator::kDefaultAlignment, stream);
}

TEST(PytorchStreamsTest, AFreedBlockServesOnlyItsOwnStream) {
  auto bfc = MakePolicyBfc("pytorch", "", 1 * kGiB, /*coalescing=*/false);
  void* first = OnStream(*bfc, 1000, /*stream=*/1);
  ASSERT_NE(first, nullptr);
  bfc->Deallocate(first);
  // The cached 2 MiB segment belongs to stream 1: stream 2 gets its own.
  void* other = OnStream(*bfc, 1000, /*stream=*/2);
  ASSERT_NE(other, nullptr);
  EXPECT_NE(other, first);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(2 * kMiB, 2 * kMiB));
  // Stream 1 finds its block again; no third segment.
  EXPECT_EQ(OnStream(*bfc, 1000, /*stream=*/1), first);
  EXPECT_EQ(RegionSizes(*bfc).size(), 2u);
  EXPECT_TRUE(InvariantsHold(*bfc));
  for (void* p : {first, other}) bfc->Deallocate(p);
}

TEST(PytorchStreamsTest, EachStreamSplitsOnlyItsOwnSegments) {
  auto bfc = MakePolicyBfc("pytorch", "", 1 * kGiB, /*coalescing=*/false);
  // 1.5 MiB on stream 0 makes a 20 MiB segment with 18.5 MiB free.
  void* a = OnStream(*bfc, 3 * kMiB / 2, /*stream=*/0);
  void* b = OnStream(*bfc, 3 * kMiB / 2, /*stream=*/7);
  ASSERT_NE(b, nullptr);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(20 * kMiB, 20 * kMiB));
  // Each stream's next request splits its own segment's free tail.
  void* a2 = OnStream(*bfc, 3 * kMiB / 2, /*stream=*/0);
  void* b2 = OnStream(*bfc, 3 * kMiB / 2, /*stream=*/7);
  EXPECT_EQ(a2, static_cast<char*>(a) + 3 * kMiB / 2);
  EXPECT_EQ(b2, static_cast<char*>(b) + 3 * kMiB / 2);
  EXPECT_EQ(RegionSizes(*bfc).size(), 2u);
  EXPECT_TRUE(InvariantsHold(*bfc));
  for (void* p : {a, b, a2, b2}) bfc->Deallocate(p);
}

TEST(PytorchStreamsTest, ExpandableSegmentsGrowOneSegmentPerStreamAndPool) {
  auto bfc = MakePolicyBfc("pytorch", "expandable_segments:True", 1 * kGiB,
                           /*coalescing=*/true);
  void* a = OnStream(*bfc, kMiB, /*stream=*/1);
  void* a2 = OnStream(*bfc, kMiB, /*stream=*/1);
  void* a3 = OnStream(*bfc, kMiB, /*stream=*/1);
  ASSERT_NE(a3, nullptr);
  // Stream 1's segment grew by a page, contiguously, to 4 MiB.
  EXPECT_EQ(a2, static_cast<char*>(a) + kMiB);
  EXPECT_EQ(a3, static_cast<char*>(a2) + kMiB);
  // Stream 2 never takes stream 1's free megabyte: it gets its own segment.
  void* b = OnStream(*bfc, kMiB, /*stream=*/2);
  void* b2 = OnStream(*bfc, kMiB, /*stream=*/2);
  ASSERT_NE(b2, nullptr);
  EXPECT_EQ(b2, static_cast<char*>(b) + kMiB);
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(4 * kMiB, 2 * kMiB));
  // Stream 1's free megabyte serves stream 1.
  void* a4 = OnStream(*bfc, kMiB, /*stream=*/1);
  EXPECT_EQ(a4, static_cast<char*>(a3) + kMiB);
  EXPECT_TRUE(InvariantsHold(*bfc));
  for (void* p : {a, a2, a3, a4, b, b2}) bfc->Deallocate(p);
}

TEST(PytorchStreamsTest, OutOfMemoryFreesOtherStreamsCachedSegments) {
  auto bfc = MakePolicyBfc("pytorch", "", 30 * kMiB, /*coalescing=*/false);
  void* cached = OnStream(*bfc, 3 * kMiB / 2, /*stream=*/1);
  ASSERT_NE(cached, nullptr);
  bfc->Deallocate(cached);
  // Stream 2 cannot use stream 1's free 20 MiB segment, and a second one does
  // not fit under 30 MiB until stream 1's cache is released.
  void* p = OnStream(*bfc, 3 * kMiB / 2, /*stream=*/2);
  ASSERT_NE(p, nullptr) << bfc->LastFailureReport();
  EXPECT_THAT(RegionSizes(*bfc), ElementsAre(20 * kMiB));
  EXPECT_EQ(bfc->GetStats()->num_alloc_retries, 1);
  EXPECT_TRUE(InvariantsHold(*bfc));
  bfc->Deallocate(p);
}

TEST(PytorchStreamsTest, PoliciesThatShareMemoryIgnoreTheStream) {
  for (const char* policy : {"tf", "tight"}) {
    SCOPED_TRACE(policy);
    auto bfc = MakePolicyBfc(policy, "", 64 * kMiB, /*coalescing=*/false);
    void* first = OnStream(*bfc, 1000, /*stream=*/1);
    ASSERT_NE(first, nullptr);
    bfc->Deallocate(first);
    EXPECT_EQ(OnStream(*bfc, 1000, /*stream=*/2), first);
    bfc->Deallocate(first);
  }
}

TEST(PytorchStreamsTest, ManyStreamsKeepTheInvariants) {
  auto bfc = MakePolicyBfc("pytorch", "", 1 * kGiB, /*coalescing=*/false);
  std::vector<void*> live;
  for (int round = 0; round < 4; ++round) {
    for (int32_t stream = -3; stream < 40; stream += 3) {
      void* p = OnStream(*bfc, 1000 + 4096 * stream * stream, stream);
      ASSERT_NE(p, nullptr);
      live.push_back(p);
    }
    for (size_t i = round % 2; i < live.size(); i += 2) {
      bfc->Deallocate(live[i]);
      live[i] = nullptr;
    }
    std::erase(live, nullptr);
    ASSERT_TRUE(InvariantsHold(*bfc));
  }
  for (void* p : live) bfc->Deallocate(p);
  EXPECT_TRUE(InvariantsHold(*bfc));
  EXPECT_EQ(bfc->GetStats()->bytes_in_use, 0u);
}

}  // namespace
}  // namespace tensormem
