// The feasibility search against an exhaustive oracle on small random sets:
// the smallest capacity it finds a placement for must be the true optimum.
#include <algorithm>
#include <numeric>
#include <random>

#include "gtest/gtest.h"
#include "plan/solver/feasibility_search.h"
#include "plan/solver/problem.h"
#include "plan/solver/static_orders.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/solver/optimal_planner.h"

namespace tensormem::solver_internal {
namespace {

// Places buffers in `order`, each at the lowest offset where it fits: some
// order reaches the optimum (place any optimal packing by offset).
uint64_t FirstFitHeight(const BufferSet& set, const std::vector<int>& order) {
  std::vector<uint64_t> offsets(set.buffers.size());
  std::vector<int> placed;
  uint64_t height = 0;
  for (const int i : order) {
    const Buffer& b = set.buffers[i];
    std::vector<std::pair<uint64_t, uint64_t>> taken;
    for (const int j : placed) {
      if (b.LiveAtSameTime(set.buffers[j])) {
        taken.emplace_back(offsets[j], offsets[j] + set.buffers[j].size);
      }
    }
    std::sort(taken.begin(), taken.end());
    uint64_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (offset + b.size <= begin) break;
      offset = std::max(offset, end);
    }
    offsets[i] = offset;
    placed.push_back(i);
    height = std::max(height, offset + b.size);
  }
  return height;
}

uint64_t BruteForceOptimum(const BufferSet& set) {
  std::vector<int> order(set.buffers.size());
  std::iota(order.begin(), order.end(), 0);
  uint64_t best = UINT64_MAX;
  do {
    best = std::min(best, FirstFitHeight(set, order));
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

BufferSet RandomSet(std::mt19937& random, int max_buffers) {
  BufferSet set;
  const int n = 1 + random() % max_buffers;
  for (int i = 0; i < n; ++i) {
    Buffer b;
    b.id = i;
    b.lower = random() % 8;
    b.upper = b.lower + 1 + random() % 5;
    b.size = 1 + random() % 9;
    set.buffers.push_back(b);
  }
  return set;
}

TEST(SolverBruteForceTest, SearchFindsExactlyTheOptimumForEveryOrder) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 400; ++trial) {
    const BufferSet set = RandomSet(random, 8);
    const uint64_t optimum = BruteForceOptimum(set);
    absl::StatusOr<Problem> problem = BuildProblem(set, 1);
    ASSERT_TRUE(problem.ok()) << problem.status();
    BuildOverlaps(*problem);
    for (int order = 0; order < kBaseOrderCount + 2; ++order) {
      FeasibilitySearch search(*problem, StaticOrderRanks(*problem, order));
      ASSERT_EQ(search.Run(optimum, {}), SearchOutcome::kFound)
          << "trial " << trial << " order " << order << " optimum " << optimum;
      BufferSet placed = set;
      for (size_t i = 0; i < problem->buffers.size(); ++i) {
        placed.buffers[problem->source_index[i]].offset = search.offsets()[i];
        EXPECT_LE(search.offsets()[i] + problem->buffers[i].size, optimum);
      }
      EXPECT_TRUE(CheckPlacement(placed).ok()) << "trial " << trial;
      EXPECT_EQ(search.Run(optimum - 1, {}), SearchOutcome::kInfeasible)
          << "trial " << trial << " order " << order << " optimum " << optimum;
    }
  }
}

TEST(SolverBruteForceTest, PlannerProvesTheOptimum) {
  std::mt19937 random(11);
  for (int trial = 0; trial < 150; ++trial) {
    const BufferSet set = RandomSet(random, 7);
    const uint64_t optimum = BruteForceOptimum(set);
    OptimalPlanOptions options;
    options.time_limit_seconds = 30;  // never reached: these take microseconds
    absl::StatusOr<OptimalPlanResult> result = PlanOptimal(set, options);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->total_size, optimum) << "trial " << trial;
    EXPECT_TRUE(result->proven_optimal) << "trial " << trial;
    EXPECT_EQ(result->lower_bound, optimum) << "trial " << trial;
    EXPECT_TRUE(CheckPlacement(result->placed).ok()) << "trial " << trial;
  }
}

}  // namespace
}  // namespace tensormem::solver_internal
