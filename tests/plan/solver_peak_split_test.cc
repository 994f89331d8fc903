// The split start for sets whose peak comes back (plan/solver/peak_split.h):
// when it applies, and that what it returns is a valid placement.
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "plan/solver/peak_split.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/solver/optimal_planner.h"

namespace tensormem::solver_internal {
namespace {

constexpr size_t kStepBuffers = 151;

// `iterations` copies of one random step, one after the other, and four
// buffers living through all of them. A step is a block of 100,000 bytes at
// its time 60, where its live bytes peak, and 150 random buffers.
BufferSet RepeatedSteps(uint32_t seed, int iterations) {
  std::mt19937 random(seed);
  std::vector<Buffer> step = {{.lower = 60, .upper = 61, .size = 100'000}};
  while (step.size() < kStepBuffers) {
    const int64_t lower = random() % 90;
    step.push_back({.lower = lower,
                    .upper = lower + 1 + static_cast<int64_t>(random() % 10),
                    .size = 1 + random() % 5000});
  }
  BufferSet set;
  for (int k = 0; k < iterations; ++k) {
    for (Buffer buffer : step) {
      buffer.lower += 100 * k;
      buffer.upper += 100 * k;
      set.buffers.push_back(buffer);
    }
  }
  for (int w = 0; w < 4; ++w) {
    set.buffers.push_back(
        {.lower = 0, .upper = 100 * iterations, .size = 1 + random() % 3000});
  }
  for (size_t i = 0; i < set.buffers.size(); ++i) set.buffers[i].id = i;
  return set;
}

uint64_t Top(const BufferSet& set, const std::vector<uint64_t>& offsets) {
  uint64_t top = 0;
  for (size_t i = 0; i < set.buffers.size(); ++i)
    top = std::max(top, offsets[i] + set.buffers[i].size);
  return top;
}

TEST(PeakSplitTest, RepeatedStepsArePlacedValidly) {
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    const BufferSet set = RepeatedSteps(seed, 2 + seed % 3);
    const std::optional<std::vector<uint64_t>> offsets =
        SplitAtFirstPeak(set, {}, /*seconds=*/0.2);
    ASSERT_TRUE(offsets.has_value()) << "seed " << seed;
    BufferSet placed = set;
    for (size_t i = 0; i < set.buffers.size(); ++i)
      placed.buffers[i].offset = (*offsets)[i];
    EXPECT_TRUE(CheckPlacement(placed, 1).ok()) << "seed " << seed;
    OptimalPlanOptions greedy;
    greedy.time_limit_seconds = 0;
    absl::StatusOr<OptimalPlanResult> bound = PlanOptimal(set, greedy);
    ASSERT_TRUE(bound.ok());
    EXPECT_GE(Top(set, *offsets), bound->lower_bound) << "seed " << seed;
  }
}

// The buffers live at both peaks (the four that live throughout) are
// stacked at the bottom, in their order, before the first part is planned.
TEST(PeakSplitTest, BuffersLiveAtBothPeaksLieAtTheBottom) {
  const BufferSet set = RepeatedSteps(3, 3);
  const std::optional<std::vector<uint64_t>> offsets =
      SplitAtFirstPeak(set, {}, /*seconds=*/0.2);
  ASSERT_TRUE(offsets.has_value());
  uint64_t bottom = 0;
  for (size_t i = set.buffers.size() - 4; i < set.buffers.size(); ++i) {
    EXPECT_EQ((*offsets)[i], bottom) << "buffer " << i;
    bottom += set.buffers[i].size;
  }
}

TEST(PeakSplitTest, AlignedOffsetsStayAligned) {
  const BufferSet set = RepeatedSteps(7, 4);
  OptimalPlanOptions aligned;
  aligned.alignment = 64;
  const std::optional<std::vector<uint64_t>> offsets =
      SplitAtFirstPeak(set, aligned, /*seconds=*/0.2);
  ASSERT_TRUE(offsets.has_value());
  BufferSet placed = set;
  for (size_t i = 0; i < set.buffers.size(); ++i)
    placed.buffers[i].offset = (*offsets)[i];
  EXPECT_TRUE(CheckPlacement(placed, 64).ok());
}

TEST(PeakSplitTest, APeakThatDoesNotComeBackIsNotSplit) {
  // One step: live bytes rise and fall once.
  EXPECT_FALSE(SplitAtFirstPeak(RepeatedSteps(3, 1), {}, 0.2).has_value());
  // Steps that grow: every later peak is higher, the first never returns.
  BufferSet growing = RepeatedSteps(3, 3);
  for (Buffer& buffer : growing.buffers) {
    if (buffer.lower >= 100) buffer.size *= 1 + buffer.lower / 100;
  }
  EXPECT_FALSE(SplitAtFirstPeak(growing, {}, 0.2).has_value());
  EXPECT_FALSE(SplitAtFirstPeak(BufferSet{}, {}, 0.2).has_value());
}

TEST(PeakSplitTest, ASplitLeavingTooFewBuffersIsNotMade) {
  // The peak moved to each step's first time: the buffers begun before it
  // ends are a handful.
  BufferSet set = RepeatedSteps(5, 2);
  for (const size_t peak : {size_t{0}, kStepBuffers}) {
    set.buffers[peak].lower -= 60;
    set.buffers[peak].upper -= 60;
  }
  EXPECT_FALSE(SplitAtFirstPeak(set, {}, 0.2).has_value());
  // Back in the middle of each step, it splits.
  for (const size_t peak : {size_t{0}, kStepBuffers}) {
    set.buffers[peak].lower += 60;
    set.buffers[peak].upper += 60;
  }
  EXPECT_TRUE(SplitAtFirstPeak(set, {}, 0.2).has_value());
}

}  // namespace
}  // namespace tensormem::solver_internal
