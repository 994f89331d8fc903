#include "tensormem/plan/checker.h"

#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

Buffer Placed(uint64_t id, int64_t lower, int64_t upper, uint64_t size,
              uint64_t offset) {
  Buffer b;
  b.id = id;
  b.lower = lower;
  b.upper = upper;
  b.size = size;
  b.offset = offset;
  return b;
}

TEST(CheckPlacementTest, AcceptsDisjointInTimeOrInSpace) {
  BufferSet set;
  set.buffers = {
      Placed(0, 0, 2, 16, 0), Placed(1, 2, 4, 16, 0),  // touch in time: fine
      Placed(2, 0, 4, 8, 16), Placed(3, 1, 3, 0, 4)};  // zero size: fine
  EXPECT_TRUE(CheckPlacement(set).ok()) << CheckPlacement(set);
  EXPECT_TRUE(CheckPlacement(BufferSet{}).ok());
}

TEST(CheckPlacementTest, NamesBothConflictingBuffersAndTheirRanges) {
  BufferSet set;
  set.buffers = {Placed(10, 0, 5, 64, 0), Placed(20, 4, 6, 8, 56)};
  const absl::Status status = CheckPlacement(set);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(),
              HasSubstr("buffer 10 (live [0, 5), bytes [0, 64))"));
  EXPECT_THAT(status.message(),
              HasSubstr("buffer 20 (live [4, 6), bytes [56, 64))"));
}

TEST(CheckPlacementTest, FindsOverlapWithTheLowerNeighbour) {
  BufferSet set;
  // The second buffer starts inside the first one's bytes.
  set.buffers = {Placed(1, 0, 3, 100, 0), Placed(2, 1, 2, 10, 90),
                 Placed(3, 0, 3, 5, 200)};
  EXPECT_FALSE(CheckPlacement(set).ok());
  set.buffers[1].offset = 100;
  EXPECT_TRUE(CheckPlacement(set).ok());
}

TEST(CheckPlacementTest, RejectsMissingUnalignedAndOverflowingOffsets) {
  BufferSet set;
  set.buffers = {Placed(7, 0, 1, 8, 0)};
  set.buffers[0].offset.reset();
  EXPECT_THAT(CheckPlacement(set).message(),
              HasSubstr("buffer 7 has no offset"));
  set.buffers[0].offset = 24;
  EXPECT_TRUE(CheckPlacement(set, 8).ok());
  EXPECT_THAT(CheckPlacement(set, 16).message(),
              HasSubstr("offset 24 is not a multiple of"));
  EXPECT_FALSE(CheckPlacement(set, 0).ok());
  set.buffers[0].offset = UINT64_MAX - 3;
  EXPECT_THAT(CheckPlacement(set).message(), HasSubstr("overflows"));
}

// Compares the sweep with an all-pairs check on small random placements.
TEST(CheckPlacementTest, AgreesWithAllPairsOnRandomPlacements) {
  std::mt19937_64 rng(42);
  int invalid = 0;
  for (int round = 0; round < 2000; ++round) {
    BufferSet set;
    const int n = 1 + rng() % 6;
    for (int i = 0; i < n; ++i) {
      const int64_t lower = rng() % 6;
      set.buffers.push_back(
          Placed(i, lower, lower + 1 + rng() % 4, rng() % 5, rng() % 12));
    }
    bool expected_ok = true;
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) {
        const Buffer& a = set.buffers[i];
        const Buffer& b = set.buffers[j];
        if (a.LiveAtSameTime(b) && *a.offset < *b.offset + b.size &&
            *b.offset < *a.offset + a.size && a.size > 0 && b.size > 0) {
          expected_ok = false;
        }
      }
    }
    invalid += !expected_ok;
    EXPECT_EQ(CheckPlacement(set).ok(), expected_ok) << FormatBufferSetCsv(set);
  }
  EXPECT_GT(invalid, 100);  // the generator exercises both answers
}

TEST(CheckObjectsTest, AcceptsValidAndExplainsInvalidPlans) {
  const std::vector<UsageRecord<>> records = {
      {16, 0, 1}, {8, 1, 2}, {64, 2, 3}};
  EXPECT_TRUE(CheckObjects(records, {{0, 1, 0}, {64, 8}}).ok());
  EXPECT_THAT(
      CheckObjects(records, {{0, 1, 0}, {32, 8}}).message(),
      HasSubstr("tensor 2 of 64 bytes does not fit object 0 of 32 bytes"));
  EXPECT_THAT(CheckObjects(records, {{0, 0, 1}, {64, 64}}).message(),
              HasSubstr("tensors 0 (tasks [0, 1]) and 1 (tasks [1, 2])"));
  EXPECT_THAT(CheckObjects(records, {{0, 1, 2}, {64, 8}}).message(),
              HasSubstr("object 2 does not exist"));
  EXPECT_FALSE(CheckObjects(records, {{0, 1}, {64, 8}}).ok());
}

TEST(CheckObjectsTest, FindsConflictHiddenBehindAShortTensor) {
  // Tensor 0 is long; tensor 1 is short and ends first; tensor 2 overlaps 0
  // only.
  const std::vector<UsageRecord<>> records = {{8, 0, 10}, {8, 1, 1}, {8, 5, 6}};
  EXPECT_FALSE(CheckObjects(records, {{0, 1, 0}, {8, 8}}).ok());
  EXPECT_TRUE(CheckObjects(records, {{0, 1, 1}, {8, 8}}).ok());
}

TEST(CheckOffsetsTest, ChecksTotalAndOverlap) {
  const std::vector<UsageRecord<>> records = {{16, 0, 1}, {8, 1, 2}};
  EXPECT_TRUE(CheckOffsets(records, {{0, 16}, 24}).ok());
  EXPECT_THAT(CheckOffsets(records, {{0, 16}, 20}).message(),
              HasSubstr("beyond the total"));
  EXPECT_FALSE(CheckOffsets(records, {{0, 8}, 24}).ok());
  EXPECT_FALSE(CheckOffsets(records, {{0, 12}, 24}, 8).ok());
}

}  // namespace
}  // namespace tensormem
