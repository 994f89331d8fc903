// The feasibility search against an exhaustive oracle on small random sets:
// the smallest capacity it finds a placement for must be the true optimum; and
// on larger sets packed with no slack, it must never claim infeasibility.
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

// With `twins`, lifetimes come from three overlapping ones and sizes from
// 1-4, so most buffers share a lifetime (often a size too) with others: the
// twins rule acts on nearly every node.
BufferSet RandomSet(std::mt19937& random, int max_buffers, bool twins = false) {
  static constexpr int64_t kTwinSpans[3][2] = {{0, 3}, {1, 4}, {2, 6}};
  BufferSet set;
  const int n = 1 + random() % max_buffers;
  for (int i = 0; i < n; ++i) {
    Buffer b;
    b.id = i;
    if (twins) {
      const int span = random() % 3;
      b.lower = kTwinSpans[span][0];
      b.upper = kTwinSpans[span][1];
      b.size = 1 + random() % 4;
    } else {
      b.lower = random() % 8;
      b.upper = b.lower + 1 + random() % 5;
      b.size = 1 + random() % 9;
    }
    set.buffers.push_back(b);
  }
  return set;
}

// Every order finds a placement at the brute-force optimum, and proves one
// byte less infeasible.
void ExpectOptimumUnderEveryOrder(bool twins, uint32_t seed, int trials) {
  std::mt19937 random(seed);
  for (int trial = 0; trial < trials; ++trial) {
    const BufferSet set = RandomSet(random, 8, twins);
    const uint64_t optimum = BruteForceOptimum(set);
    absl::StatusOr<Problem> problem = BuildProblem(set, 1);
    ASSERT_TRUE(problem.ok()) << problem.status();
    BuildOverlaps(*problem);
    for (int order = 0; order < kBaseOrderCount + 2; ++order) {
      FeasibilitySearch search(*problem, order);
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

TEST(SolverBruteForceTest, SearchFindsExactlyTheOptimumForEveryOrder) {
  ExpectOptimumUnderEveryOrder(/*twins=*/false, /*seed=*/7, /*trials=*/400);
}

TEST(SolverBruteForceTest, SearchFindsTheOptimumAmongManyTwins) {
  ExpectOptimumUnderEveryOrder(/*twins=*/true, /*seed=*/3, /*trials=*/200);
}

// Capacities near 2^63 bytes: the section check can no longer pack a reach
// and a buffer index into one 64-bit key and sorts buffers by reach instead.
// Multiplying every size and the capacity by one factor scales every
// comparison the search makes, so it must walk exactly the same tree.
TEST(SolverBruteForceTest, HugeCapacitiesSearchTheSameTree) {
  constexpr uint64_t kScale = uint64_t{1} << 56;
  std::mt19937 random(5);
  for (int trial = 0; trial < 100; ++trial) {
    const BufferSet set = RandomSet(random, 8);
    BufferSet scaled = set;
    for (Buffer& b : scaled.buffers) b.size *= kScale;
    const uint64_t optimum = BruteForceOptimum(set);
    absl::StatusOr<Problem> problem = BuildProblem(set, 1);
    absl::StatusOr<Problem> huge = BuildProblem(scaled, 1);
    ASSERT_TRUE(problem.ok() && huge.ok());
    BuildOverlaps(*problem);
    BuildOverlaps(*huge);
    for (int order = 0; order < kBaseOrderCount; ++order) {
      for (const uint64_t capacity : {optimum, optimum - 1}) {
        FeasibilitySearch search(*problem, order), huge_search(*huge, order);
        const SearchOutcome outcome = search.Run(capacity, {});
        EXPECT_EQ(outcome, capacity == optimum ? SearchOutcome::kFound
                                               : SearchOutcome::kInfeasible);
        EXPECT_EQ(huge_search.Run(capacity * kScale, {}), outcome)
            << "trial " << trial << " order " << order;
        EXPECT_EQ(huge_search.nodes(), search.nodes())
            << "trial " << trial << " order " << order;
      }
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

// A packing with no slack at all, built bottom-up: each new buffer lands on
// the lowest stretch of the skyline (all or part of it), its size cut so that
// nothing passes `capacity`. Every section ends exactly full, like the tight
// sections of MiniMalloc's challenging sets, and the set is known to fit.
BufferSet TightSet(std::mt19937& random, uint64_t capacity, int steps,
                   uint64_t max_size) {
  std::vector<uint64_t> skyline(steps, 0);
  BufferSet set;
  while (true) {
    const int low = static_cast<int>(
        std::min_element(skyline.begin(), skyline.end()) - skyline.begin());
    if (skyline[low] == capacity) break;
    int run_end = low;
    while (run_end < steps && skyline[run_end] == skyline[low]) ++run_end;
    const int begin =
        random() % 3 == 0 ? low + random() % (run_end - low) : low;
    const int end =
        random() % 2 == 0 ? run_end : begin + 1 + random() % (run_end - begin);
    Buffer b;
    b.id = set.buffers.size();
    b.lower = begin;
    b.upper = end;
    b.size = std::min(capacity - skyline[low], 1 + random() % max_size);
    for (int t = begin; t < end; ++t) skyline[t] += b.size;
    set.buffers.push_back(b);
  }
  return set;
}

// Too large for the oracle, but feasible by construction: no pruning rule may
// ever call one of these infeasible, whatever the order.
TEST(SolverBruteForceTest, NeverRejectsAPackingWithFullSections) {
  std::mt19937 random(5);
  int found = 0, runs = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const BufferSet set = TightSet(random, 256, 16, 100);
    absl::StatusOr<Problem> problem = BuildProblem(set, 1);
    ASSERT_TRUE(problem.ok()) << problem.status();
    BuildOverlaps(*problem);
    for (int order = 0; order < kBaseOrderCount; ++order) {
      FeasibilitySearch search(*problem, order);
      const SearchOutcome outcome = search.Run(256, {.node_limit = 20000});
      ASSERT_NE(outcome, SearchOutcome::kInfeasible)
          << "trial " << trial << " order " << order << " ("
          << set.buffers.size() << " buffers)";
      ++runs;
      found += outcome == SearchOutcome::kFound;
    }
  }
  // Most are easy; a search that stops on all of them proves nothing.
  EXPECT_GT(found, runs * 3 / 4);
}

}  // namespace
}  // namespace tensormem::solver_internal
