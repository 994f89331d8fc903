// Filling the holes between kept buffers that live throughout
// (plan/solver/hole_fill.h), and the optimal planner starting from it.
#include <algorithm>
#include <optional>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "plan/large_set_test_util.h"
#include "plan/solver/hole_fill.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/solver/optimal_planner.h"

namespace tensormem::solver_internal {
namespace {

constexpr uint64_t kAlign = 256;

struct WalledRecords {
  std::vector<UsageRecord<>> records;
  PinnedOffsets kept;
  std::vector<std::pair<uint64_t, uint64_t>> walls;  // [begin, end)
};

// Random buffers, then six walls living through all of them with a hole of
// 1-40 alignments below each.
WalledRecords RandomWalledRecords(uint32_t seed) {
  WalledRecords set;
  set.records = testing::RandomRecords(seed, 150, 200);
  set.kept.assign(set.records.size(), std::nullopt);
  TaskId last = 0;
  for (const UsageRecord<>& record : set.records)
    last = std::max(last, record.last_task);
  std::mt19937 random(seed);
  uint64_t offset = 0;
  for (int w = 0; w < 6; ++w) {
    offset += kAlign * (1 + random() % 40);
    const uint64_t size = kAlign * (1 + random() % 8);
    set.records.push_back(
        {.tensor_size = size, .first_task = 0, .last_task = last});
    set.kept.push_back(offset);
    set.walls.emplace_back(offset, offset + size);
    offset += size;
  }
  return set;
}

bool Overlap(const UsageRecord<>& a, uint64_t a_at, const UsageRecord<>& b,
             uint64_t b_at) {
  return a.LiveAtSameTime(b) && a_at < b_at + b.tensor_size &&
         b_at < a_at + a.tensor_size;
}

TEST(HoleFillTest, FilledBuffersLieInHolesAndOverlapNothing) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const WalledRecords set = RandomWalledRecords(seed);
    const std::optional<PinnedOffsets> filled =
        FillHolesAtThePeak(set.records, set.kept, kAlign);
    ASSERT_TRUE(filled.has_value()) << "seed " << seed;
    const uint64_t top = set.walls.back().second;
    size_t in_holes = 0;
    for (size_t i = 0; i < set.records.size(); ++i) {
      if (set.kept[i]) {
        EXPECT_EQ((*filled)[i], set.kept[i]);
        continue;
      }
      if (!(*filled)[i]) continue;
      ++in_holes;
      const uint64_t at = *(*filled)[i];
      EXPECT_EQ(at % kAlign, 0u);
      EXPECT_LE(at + set.records[i].tensor_size, top) << "seed " << seed;
      for (size_t j = 0; j < i; ++j) {
        if ((*filled)[j]) {
          EXPECT_FALSE(
              Overlap(set.records[i], at, set.records[j], *(*filled)[j]))
              << "seed " << seed << ": " << i << " and " << j;
        }
      }
    }
    EXPECT_GT(in_holes, 0u) << "seed " << seed;
    // The rest goes around them.
    absl::StatusOr<BestFitResult> rest =
        BestFitMulti(set.records, kAlign, *filled);
    ASSERT_TRUE(rest.ok());
    EXPECT_TRUE(CheckOffsets(set.records, rest->offsets, kAlign).ok());
  }
}

TEST(HoleFillTest, NothingToFillWithoutWallsOrHoles) {
  std::vector<UsageRecord<>> records = {
      {.tensor_size = 1024, .first_task = 0, .last_task = 9},
      {.tensor_size = 512, .first_task = 2, .last_task = 5},
      {.tensor_size = 512, .first_task = 6, .last_task = 9}};
  // No kept buffer.
  EXPECT_FALSE(FillHolesAtThePeak(records, PinnedOffsets(3), kAlign));
  // A kept buffer that does not live throughout is no wall.
  EXPECT_FALSE(
      FillHolesAtThePeak(records, {std::nullopt, 4096, std::nullopt}, kAlign));
  // A wall at 0 leaves no hole below it.
  EXPECT_FALSE(
      FillHolesAtThePeak(records, {0, std::nullopt, std::nullopt}, kAlign));
  // Sizes whose sum passes INT64_MAX are not filled (no overflow).
  const std::vector<UsageRecord<>> huge = {
      {.tensor_size = uint64_t{1} << 62, .first_task = 0, .last_task = 9},
      {.tensor_size = uint64_t{1} << 62, .first_task = 2, .last_task = 5},
      {.tensor_size = 512, .first_task = 6, .last_task = 9}};
  EXPECT_FALSE(FillHolesAtThePeak(
      huge, {uint64_t{1} << 62, std::nullopt, std::nullopt}, kAlign));
  // A wall above a hole: the buffers live at the peak go in.
  const std::optional<PinnedOffsets> filled =
      FillHolesAtThePeak(records, {1024, std::nullopt, std::nullopt}, kAlign);
  ASSERT_TRUE(filled.has_value());
  EXPECT_EQ((*filled)[1], 0u);
  EXPECT_EQ((*filled)[2], 0u);
}

// Walls of 1 KiB above holes of 4 and 8 KiB; buffers of 4 and 8 KiB, two
// each, one after the other, and one of 2 KiB at the start. The holes take
// the 4 and 8 KiB buffers; the 2 KiB one goes above the walls, where the
// bound (2 KiB of walls + 14 KiB at the peak) leaves 2 KiB.
TEST(HoleFillTest, TheHolesTakeWhatLivesAtThePeak) {
  constexpr uint64_t kKiB = 1024;
  BufferSet set;
  auto add = [&](uint64_t size, int64_t lower, int64_t upper,
                 std::optional<uint64_t> offset) {
    set.buffers.push_back({.id = set.buffers.size(),
                           .lower = lower,
                           .upper = upper,
                           .size = size,
                           .offset = offset});
  };
  add(1 * kKiB, 0, 21, 4 * kKiB);   // wall above the 4 KiB hole
  add(1 * kKiB, 0, 21, 13 * kKiB);  // wall above the 8 KiB hole
  add(4 * kKiB, 0, 11, std::nullopt);
  add(4 * kKiB, 11, 21, std::nullopt);
  add(8 * kKiB, 0, 11, std::nullopt);
  add(8 * kKiB, 11, 21, std::nullopt);
  add(2 * kKiB, 0, 6, std::nullopt);
  absl::StatusOr<std::vector<UsageRecord<>>> records = ToUsageRecords(set);
  ASSERT_TRUE(records.ok());
  PinnedOffsets kept(set.buffers.size());
  kept[0] = 4 * kKiB;
  kept[1] = 13 * kKiB;
  const std::optional<PinnedOffsets> filled =
      FillHolesAtThePeak(*records, kept, kAlign);
  ASSERT_TRUE(filled.has_value());
  EXPECT_EQ((*filled)[2], 0u);
  EXPECT_EQ((*filled)[3], 0u);
  EXPECT_EQ((*filled)[4], 5 * kKiB);
  EXPECT_EQ((*filled)[5], 5 * kKiB);
  EXPECT_FALSE((*filled)[6].has_value());

  OptimalPlanOptions options;
  options.keep_given_offsets = true;
  options.alignment = kAlign;
  options.time_limit_seconds = 1;
  absl::StatusOr<OptimalPlanResult> plan = PlanOptimal(set, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->lower_bound, 16 * kKiB);
  EXPECT_EQ(plan->start_size, 16 * kKiB);
  EXPECT_TRUE(plan->proven_optimal);
  EXPECT_TRUE(CheckPlacement(plan->placed, kAlign).ok());
}

}  // namespace
}  // namespace tensormem::solver_internal
