// Properties every plan must have, on random DNN-like inputs: valid, no
// smaller than its lower bound, and the orderings between strategies that
// follow from their definitions.
#include <random>

#include "gtest/gtest.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/memory_management.h"
#include "tensormem/plan/object_strategies.h"
#include "tensormem/plan/offset_strategies.h"
#include "tensormem/plan/task_profiles.h"

namespace tensormem {
namespace {

// Records sorted by first task (as a model's execution order gives them),
// mostly short-lived with a few long-lived ones, sizes over three orders of
// magnitude with repeats (so EQUALITY finds matches).
std::vector<UsageRecord<>> RandomRecords(std::mt19937_64& rng, int n) {
  std::vector<UsageRecord<>> records;
  TaskId task = 0;
  for (int i = 0; i < n; ++i) {
    task += rng() % 3 == 0;
    const TaskId length = rng() % 8 == 0 ? rng() % 20 : rng() % 3;
    const uint64_t size =
        (rng() % 4 == 0 ? 0 : 1 + rng() % 16) * (uint64_t{1} << (rng() % 10));
    records.push_back({size, task, task + length});
  }
  return records;
}

constexpr MemoryStrategy kAll[] = {
    MemoryStrategy::kNaive,         MemoryStrategy::kEquality,
    MemoryStrategy::kGreedyInOrder, MemoryStrategy::kGreedyByBreadth,
    MemoryStrategy::kGreedyBySize,  MemoryStrategy::kGreedyBest,
    MemoryStrategy::kMinCostFlow};

TEST(PlanInvariantsTest, EveryPlanIsValidAndAboveItsLowerBound) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 150; ++round) {
    const std::vector<UsageRecord<>> records =
        RandomRecords(rng, 1 + rng() % 40);
    const uint64_t objects_bound = SharedObjectsLowerBound(records);
    const uint64_t offsets_bound = MaxBreadth(records);
    ASSERT_GE(objects_bound, offsets_bound);
    uint64_t totals[7];
    for (MemoryStrategy strategy : kAll) {
      ObjectsAssignment<> objects;
      ASSERT_TRUE(AssignObjectsToTensors(records, strategy, &objects).ok());
      ASSERT_TRUE(CheckObjects(records, objects).ok())
          << CheckObjects(records, objects) << " strategy "
          << static_cast<int>(strategy);
      totals[static_cast<int>(strategy)] = TotalSize(objects);
      EXPECT_GE(TotalSize(objects), objects_bound);
    }
    const uint64_t naive = totals[static_cast<int>(MemoryStrategy::kNaive)];
    const uint64_t best = totals[static_cast<int>(MemoryStrategy::kGreedyBest)];
    EXPECT_LE(best, totals[static_cast<int>(MemoryStrategy::kGreedyBySize)]);
    EXPECT_LE(best, totals[static_cast<int>(MemoryStrategy::kGreedyByBreadth)]);
    for (uint64_t total : totals) EXPECT_LE(total, naive);

    for (uint64_t align : {uint64_t{1}, uint64_t{64}}) {
      absl::StatusOr<OffsetsAssignment> greedy =
          GreedyBySizeOffsets(records, align);
      ASSERT_TRUE(greedy.ok());
      ASSERT_TRUE(CheckOffsets(records, *greedy, align).ok())
          << CheckOffsets(records, *greedy, align);
      EXPECT_GE(greedy->total_size, offsets_bound);
      absl::StatusOr<BestFitResult> best_fit = BestFitMulti(records, align);
      ASSERT_TRUE(best_fit.ok());
      ASSERT_TRUE(CheckOffsets(records, best_fit->offsets, align).ok())
          << CheckOffsets(records, best_fit->offsets, align);
      EXPECT_GE(best_fit->offsets.total_size, offsets_bound);
      if (align == 1) {
        EXPECT_LE(greedy->total_size, naive);
        EXPECT_LE(best_fit->offsets.total_size, naive);
      }
      for (const PlacementVariant& variant : BestFitVariants()) {
        const OffsetsAssignment plan =
            PlaceInOrder(records, variant.order, variant.rule, align);
        ASSERT_TRUE(CheckOffsets(records, plan, align).ok()) << variant.name;
        EXPECT_LE(best_fit->offsets.total_size, plan.total_size);
      }
      const OffsetsAssignment area = PlaceInOrder(
          records, PlacementOrder::kArea, GapRule::kBestFit, align);
      ASSERT_TRUE(CheckOffsets(records, area, align).ok());
    }
  }
}

// Without zero-size tensors (which TFLite lets split gaps), best fit in
// size order is TFLite's GREEDY_BY_SIZE offsets, placement for placement:
// the occupancy index must find exactly the gaps of TFLite's full scan.
TEST(PlanInvariantsTest, BestFitBySizeEqualsTfliteGreedyBySize) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 300; ++round) {
    std::vector<UsageRecord<>> records = RandomRecords(rng, 1 + rng() % 60);
    for (UsageRecord<>& r : records) r.tensor_size += r.tensor_size == 0;
    for (uint64_t align : {uint64_t{1}, uint64_t{8}, uint64_t{48}}) {
      absl::StatusOr<OffsetsAssignment> tflite =
          GreedyBySizeOffsets(records, align);
      ASSERT_TRUE(tflite.ok());
      const OffsetsAssignment ours = PlaceInOrder(
          records, PlacementOrder::kSize, GapRule::kBestFit, align);
      ASSERT_EQ(ours.offsets, tflite->offsets)
          << "round " << round << " align " << align;
      ASSERT_EQ(ours.total_size, tflite->total_size);
    }
  }
}

TEST(PlanInvariantsTest, ReallocationGraphPlansAreValid) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 100; ++round) {
    const std::vector<UsageRecord<>> records =
        RandomRecords(rng, 1 + rng() % 25);
    const size_t n = records.size();
    UsageGraph graph(n);
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) {
        if (i != j && rng() % 2 == 0) graph[i].push_back(j);
      }
    }
    absl::StatusOr<ObjectsAssignment<>> plan =
        GreedyInOrderAssignment(records, &graph);
    ASSERT_TRUE(plan.ok());
    ASSERT_TRUE(CheckObjects(records, *plan).ok())
        << CheckObjects(records, *plan);
  }
}

TEST(PlanInvariantsTest, SegmentProfilesGiveTheSamePositionalMaximums) {
  // Positional maximums come from segment profiles; compare with per-task ones.
  std::mt19937_64 rng(3);
  for (int round = 0; round < 200; ++round) {
    const std::vector<UsageRecord<>> records =
        RandomRecords(rng, 1 + rng() % 30);
    std::vector<uint64_t> expected;
    for (const TaskProfile& profile : CalculateTaskProfiles(records)) {
      if (expected.size() < profile.size()) expected.resize(profile.size(), 0);
      for (size_t k = 0; k < profile.size(); ++k) {
        expected[k] = std::max(expected[k], records[profile[k]].tensor_size);
      }
    }
    EXPECT_EQ(CalculatePositionalMaximums(records), expected);
  }
}

// Pinned tensors keep their offsets, and the rest go around them: taking a
// valid placement, pinning some of its tensors and placing the others again
// gives a valid placement with the pinned offsets unchanged.
TEST(PlanInvariantsTest, PinnedTensorsKeepTheirOffsets) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 200; ++round) {
    const std::vector<UsageRecord<>> records =
        RandomRecords(rng, 1 + rng() % 50);
    const uint64_t align = round % 2 == 0 ? 1 : 16;
    absl::StatusOr<BestFitResult> first = BestFitMulti(records, align);
    ASSERT_TRUE(first.ok());
    PinnedOffsets pinned(records.size());
    for (size_t i = 0; i < records.size(); ++i) {
      if (rng() % 3 == 0) pinned[i] = first->offsets.offsets[i];
    }
    absl::StatusOr<BestFitResult> around = BestFitMulti(records, align, pinned);
    ASSERT_TRUE(around.ok()) << around.status();
    ASSERT_TRUE(CheckOffsets(records, around->offsets, align).ok())
        << "round " << round << ": "
        << CheckOffsets(records, around->offsets, align);
    for (size_t i = 0; i < records.size(); ++i) {
      if (pinned[i]) {
        EXPECT_EQ(around->offsets.offsets[i], *pinned[i]);
      }
    }
    EXPECT_GE(around->offsets.total_size, MaxBreadth(records));
  }
}

TEST(PlanInvariantsTest, PinnedOffsetsThatCannotBeKeptAreRefused) {
  const std::vector<UsageRecord<>> records = {{64, 0, 1}, {32, 1, 2}};
  absl::StatusOr<BestFitResult> too_few =
      BestFitMulti(records, 16, PinnedOffsets{std::nullopt});
  EXPECT_FALSE(too_few.ok());
  EXPECT_NE(too_few.status().message().find("1 pinned offsets for 2"),
            std::string::npos)
      << too_few.status();
  absl::StatusOr<BestFitResult> misaligned =
      BestFitMulti(records, 16, PinnedOffsets{8, std::nullopt});
  EXPECT_FALSE(misaligned.ok());
  EXPECT_NE(misaligned.status().message().find("record 0"), std::string::npos);
  absl::StatusOr<BestFitResult> past_the_end =
      BestFitMulti(records, 16, PinnedOffsets{~uint64_t{0} - 15, std::nullopt});
  EXPECT_FALSE(past_the_end.ok());
}

}  // namespace
}  // namespace tensormem
