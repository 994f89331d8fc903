// PlanOptimal end to end: options, bounds, the greedy start, the bundled
// benchmark instances and the large-set path.
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "plan/solver/feasibility_search.h"
#include "plan/solver/local_moves.h"
#include "plan/solver/parallel_search.h"
#include "plan/solver/problem.h"
#include "plan/solver/static_orders.h"
#include "shared_data.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/offset_strategies.h"
#include "tensormem/plan/solver/optimal_planner.h"
#include "tensormem/plan/solver/optimal_strategy.h"
#include "tensormem/plan/strategy_registry.h"

namespace tensormem {
namespace {

BufferSet ReadSet(const std::string& path) {
  absl::StatusOr<BufferSet> set = ReadBufferSetCsv(path);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *set : BufferSet{};
}

BufferSet RandomSet(uint32_t seed, int n, int horizon, uint64_t max_size) {
  std::mt19937 random(seed);
  BufferSet set;
  for (int i = 0; i < n; ++i) {
    Buffer b;
    b.id = i;
    b.lower = random() % horizon;
    b.upper = b.lower + 1 + random() % (horizon / 4 + 1);
    b.size = 1 + random() % max_size;
    set.buffers.push_back(b);
  }
  return set;
}

Buffer MakeBuffer(uint64_t id, int64_t lower, int64_t upper, uint64_t size) {
  Buffer b;
  b.id = id;
  b.lower = lower;
  b.upper = upper;
  b.size = size;
  return b;
}

uint64_t GreedyTotal(const BufferSet& set, uint64_t alignment) {
  absl::StatusOr<std::vector<UsageRecord<>>> records = ToUsageRecords(set);
  absl::StatusOr<BestFitResult> best_fit = BestFitMulti(*records, alignment);
  absl::StatusOr<OffsetsAssignment> by_size =
      GreedyBySizeOffsets(*records, alignment);
  return std::min(best_fit->offsets.total_size, by_size->total_size);
}

TEST(OptimalPlannerTest, TimeLimitZeroReturnsTheGreedyPlan) {
  const BufferSet set = RandomSet(3, 60, 40, 1000);
  OptimalPlanOptions options;
  options.time_limit_seconds = 0;
  absl::StatusOr<OptimalPlanResult> result = PlanOptimal(set, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->method, "start");
  EXPECT_EQ(result->nodes, 0u);
  EXPECT_EQ(result->total_size, GreedyTotal(set, 1));
  EXPECT_EQ(result->total_size, result->start_size);
  EXPECT_TRUE(CheckPlacement(result->placed).ok());
}

TEST(OptimalPlannerTest, TimeLimitZeroKeepsAGivenStartPlanAsIs) {
  BufferSet set;
  set.buffers = {MakeBuffer(0, 0, 2, 4), MakeBuffer(1, 1, 3, 4)};
  OptimalPlanOptions options;
  options.time_limit_seconds = 0;
  options.start_offsets = {10, 0};
  absl::StatusOr<OptimalPlanResult> result = PlanOptimal(set, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result->placed.buffers[0].offset, 10u);
  EXPECT_EQ(*result->placed.buffers[1].offset, 0u);
  EXPECT_EQ(result->total_size, 14u);
  EXPECT_FALSE(result->proven_optimal);
  // With time, the same start is improved to the bound and proven.
  options.time_limit_seconds = 10;
  result = PlanOptimal(set, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->total_size, 8u);
  EXPECT_TRUE(result->proven_optimal);
}

TEST(OptimalPlannerTest, RejectsBadOptionsAndStartPlans) {
  const BufferSet set = RandomSet(5, 10, 10, 50);
  OptimalPlanOptions options;
  options.threads = 0;
  EXPECT_EQ(PlanOptimal(set, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = {};
  options.time_limit_seconds = -1;
  EXPECT_EQ(PlanOptimal(set, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = {};
  options.alignment = 0;
  EXPECT_EQ(PlanOptimal(set, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = {};
  options.start_offsets =
      std::vector<uint64_t>(set.buffers.size(), 0);  // all overlap
  const absl::Status status = PlanOptimal(set, options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("start plan is not valid"), std::string::npos)
      << status;
}

// Buffers with given offsets (memory already in use) keep them; local moves
// lower the others without touching them.
TEST(OptimalPlannerTest, GivenOffsetsAreKeptAndTheRestGoesAround) {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    BufferSet set = RandomSet(seed, 80, 50, 900);
    OptimalPlanOptions options;
    options.time_limit_seconds = 0;
    options.alignment = 16;
    absl::StatusOr<OptimalPlanResult> free_plan = PlanOptimal(set, options);
    ASSERT_TRUE(free_plan.ok());
    std::mt19937 random(seed);
    PinnedOffsets pinned(set.buffers.size());
    for (size_t i = 0; i < set.buffers.size(); ++i) {
      if (random() % 4 == 0) {
        set.buffers[i].offset = free_plan->placed.buffers[i].offset;
        pinned[i] = set.buffers[i].offset;
      }
    }
    absl::StatusOr<std::vector<UsageRecord<>>> records = ToUsageRecords(set);
    ASSERT_TRUE(records.ok());
    absl::StatusOr<BestFitResult> best_fit = BestFitMulti(*records, 16, pinned);
    ASSERT_TRUE(best_fit.ok());
    options.time_limit_seconds = 1;
    options.keep_given_offsets = true;
    absl::StatusOr<OptimalPlanResult> kept = PlanOptimal(set, options);
    ASSERT_TRUE(kept.ok()) << kept.status();
    EXPECT_TRUE(CheckPlacement(kept->placed, 16).ok())
        << CheckPlacement(kept->placed, 16);
    for (size_t i = 0; i < set.buffers.size(); ++i) {
      if (pinned[i]) {
        EXPECT_EQ(kept->placed.buffers[i].offset, pinned[i]);
      }
    }
    EXPECT_EQ(kept->start_size, best_fit->offsets.total_size);
    EXPECT_LE(kept->total_size, kept->start_size);
    EXPECT_GE(kept->total_size, kept->lower_bound);
    // No placement ends below a kept buffer: the bound says so.
    for (size_t i = 0; i < set.buffers.size(); ++i) {
      if (pinned[i]) {
        EXPECT_GE(kept->lower_bound, *pinned[i] + set.buffers[i].size);
      }
    }
  }
}

TEST(OptimalPlannerTest, GivenOffsetsThatOverlapAreRefused) {
  BufferSet set;
  set.buffers = {{.id = 0, .lower = 0, .upper = 4, .size = 64, .offset = 0},
                 {.id = 1, .lower = 2, .upper = 6, .size = 64, .offset = 32},
                 {.id = 2, .lower = 0, .upper = 6, .size = 64}};
  OptimalPlanOptions options;
  options.keep_given_offsets = true;
  absl::StatusOr<OptimalPlanResult> kept = PlanOptimal(set, options);
  EXPECT_FALSE(kept.ok());
  EXPECT_NE(kept.status().message().find("given offsets are not a valid"),
            std::string::npos)
      << kept.status();
  options.start_offsets = {0, 64, 128};
  absl::StatusOr<OptimalPlanResult> both = PlanOptimal(set, options);
  EXPECT_FALSE(both.ok());
}

// A start plan may come with kept offsets when it leaves them in place.
TEST(OptimalPlannerTest, AStartPlanMustLeaveKeptBuffersInPlace) {
  BufferSet set;
  set.buffers = {{.id = 0, .lower = 0, .upper = 4, .size = 64, .offset = 64},
                 {.id = 7, .lower = 2, .upper = 6, .size = 64}};
  OptimalPlanOptions options;
  options.keep_given_offsets = true;
  options.time_limit_seconds = 0;
  options.start_offsets = {64, 128};
  absl::StatusOr<OptimalPlanResult> plan = PlanOptimal(set, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->start_size, 192u);
  options.start_offsets = {0, 64};
  plan = PlanOptimal(set, options);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("moves kept buffer 0 from offset 64"),
            std::string::npos)
      << plan.status();
}

TEST(OptimalPlannerTest, CapacityBelowTheLowerBoundFailsWithoutSearching) {
  TENSORMEM_SHARED_DATA_OR_SKIP(path, "minimalloc/challenging/E.1048576.csv");
  const BufferSet set = ReadSet(path);
  const uint64_t bound = PeakLiveBytes(set);
  OptimalPlanOptions options;
  options.capacity = bound - 1;
  const absl::Status status = PlanOptimal(set, options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("below the peak of live bytes"),
            std::string::npos)
      << status;

  absl::StatusOr<solver_internal::Problem> problem =
      solver_internal::BuildProblem(set, 1);
  ASSERT_TRUE(problem.ok());
  solver_internal::BuildOverlaps(*problem);
  solver_internal::FeasibilitySearch search(*problem, 0);
  EXPECT_EQ(search.Run(bound - 1, {}),
            solver_internal::SearchOutcome::kInfeasible);
  EXPECT_EQ(search.nodes(), 0u);
}

TEST(OptimalPlannerTest, FitsChallengingInstancesAtTheirCapacity) {
  // Of the base orders only contention-then-overlaps packs E quickly (the
  // others run past 300k nodes), so this also guards the choice of orders.
  TENSORMEM_SHARED_DATA_OR_SKIP(folder, "minimalloc/challenging");
  for (const char* name : {"A", "E", "F"}) {
    const BufferSet set =
        ReadSet(folder + "/" + std::string(name) + ".1048576.csv");
    OptimalPlanOptions options;
    options.capacity = 1048576;
    options.time_limit_seconds = 60;
    absl::StatusOr<OptimalPlanResult> result = PlanOptimal(set, options);
    ASSERT_TRUE(result.ok()) << name << ": " << result.status();
    EXPECT_LE(result->total_size, 1048576u) << name;
    EXPECT_TRUE(CheckPlacement(result->placed).ok()) << name;
    // These are tight: the capacity is the peak of live bytes.
    EXPECT_TRUE(result->proven_optimal) << name;
  }
}

TEST(OptimalPlannerTest, TwoThreadsFindThePlanToo) {
  TENSORMEM_SHARED_DATA_OR_SKIP(path, "minimalloc/challenging/A.1048576.csv");
  const BufferSet set = ReadSet(path);
  OptimalPlanOptions options;
  options.threads = 2;
  options.time_limit_seconds = 60;
  absl::StatusOr<OptimalPlanResult> result = PlanOptimal(set, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->total_size, 1048576u);
  EXPECT_TRUE(result->proven_optimal);
  EXPECT_EQ(result->method, "search");
  EXPECT_GT(result->nodes, 0u);
  EXPECT_TRUE(CheckPlacement(result->placed).ok());
}

TEST(OptimalPlannerTest, AlignedPlansAreValidAndNeverWorseThanGreedy) {
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    const BufferSet set = RandomSet(seed, 25, 30, 700);
    OptimalPlanOptions options;
    options.alignment = 64;
    options.time_limit_seconds = 0.1;
    absl::StatusOr<OptimalPlanResult> result = PlanOptimal(set, options);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_TRUE(CheckPlacement(result->placed, 64).ok()) << "seed " << seed;
    EXPECT_LE(result->total_size, GreedyTotal(set, 64)) << "seed " << seed;
    EXPECT_GE(result->total_size, result->lower_bound) << "seed " << seed;
  }
}

TEST(OptimalPlannerTest, RealModelReachesTheLowerBound) {
  TENSORMEM_SHARED_DATA_OR_SKIP(path, "idealloc/iree/iree_mobilenet.csv");
  const BufferSet set = ReadSet(path);
  BufferSet unplaced = set;
  for (Buffer& b : unplaced.buffers) b.offset.reset();
  OptimalPlanOptions options;
  options.time_limit_seconds = 20;
  absl::StatusOr<OptimalPlanResult> result = PlanOptimal(unplaced, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->total_size, PeakLiveBytes(unplaced));
  EXPECT_TRUE(result->proven_optimal);
  EXPECT_TRUE(CheckPlacement(result->placed).ok());
}

TEST(OptimalPlannerTest, LargeSetsGetWindowedOrdersAndStayValid) {
  // Short lifetimes, so the greedy start takes little of the test's time.
  std::mt19937 random(9);
  BufferSet set;
  for (int i = 0; i < 8200; ++i) {
    set.buffers.push_back(MakeBuffer(i, i / 4, i / 4 + 1 + random() % 100,
                                     1 + random() % (1 << 16)));
  }
  for (const uint64_t alignment : {uint64_t{1}, uint64_t{256}}) {
    OptimalPlanOptions options;
    options.time_limit_seconds = 1;
    options.alignment = alignment;
    absl::StatusOr<OptimalPlanResult> result = PlanOptimal(set, options);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_NE(result->method, "search");
    EXPECT_LE(result->total_size, result->start_size);
    EXPECT_LE(result->total_size, GreedyTotal(set, alignment));
    EXPECT_EQ(result->nodes, 0u);
    EXPECT_TRUE(CheckPlacement(result->placed, alignment).ok());
  }
}

// Between 4,096 and 8,192 buffers the search follows the large-set steps,
// from their best plan, with the other half of the time.
TEST(OptimalPlannerTest, MidSizedSetsAreSearchedAfterTheLargeSetSteps) {
  const BufferSet set = RandomSet(9, 4500, 2500, 1 << 16);
  OptimalPlanOptions options;
  options.time_limit_seconds = 0.05;
  // On the wall clock the start and the large-set steps could use up the
  // limit on a busy machine or under sanitizers, leaving nothing for the
  // search; counted, they take half of it wherever it runs.
  options.counted_time = true;
  absl::StatusOr<OptimalPlanResult> result = PlanOptimal(set, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->nodes, 0u);
  EXPECT_LE(result->total_size, GreedyTotal(set, 1));
  EXPECT_TRUE(CheckPlacement(result->placed).ok());
}

TEST(OptimalPlannerTest, LargeSetsStopAtTheFirstPlanWithinTheCapacity) {
  const BufferSet set = RandomSet(9, 4500, 2500, 1 << 16);
  OptimalPlanOptions options;
  options.time_limit_seconds = 0;
  absl::StatusOr<OptimalPlanResult> start = PlanOptimal(set, options);
  ASSERT_TRUE(start.ok()) << start.status();
  // Any plan below the greedy start is enough: the first windowed order
  // that beats it ends the run, long before the time limit.
  options.time_limit_seconds = 120;
  options.capacity = start->total_size - 1;
  absl::StatusOr<OptimalPlanResult> result = PlanOptimal(set, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_LE(result->total_size, *options.capacity);
  // Left to run, the repairs go on for about a minute (several under the
  // sanitizers): the run must end with the plan that met the capacity, well
  // before its time limit, whatever the machine's speed.
  EXPECT_LT(result->seconds - result->seconds_to_best, 2.0);
  EXPECT_LT(result->seconds, 0.9 * options.time_limit_seconds);
  EXPECT_TRUE(CheckPlacement(result->placed).ok());
}

TEST(OptimalPlannerTest, EmptyAndZeroSizeSetsArePlannedTrivially) {
  BufferSet set;
  absl::StatusOr<OptimalPlanResult> result = PlanOptimal(set, {});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->total_size, 0u);
  EXPECT_TRUE(result->proven_optimal);
  set.buffers = {MakeBuffer(4, 0, 3, 0)};
  result = PlanOptimal(set, {});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->total_size, 0u);
  EXPECT_TRUE(CheckPlacement(result->placed).ok());
}

TEST(OptimalPlannerTest, RegisteredAsTheOptimalStrategy) {
  const BufferSet set = RandomSet(4, 30, 20, 500);
  PlanOptions options;
  options.time_limit_seconds = 1;
  absl::StatusOr<PlanResult> plan =
      RunStrategy("optimal", set, PlanMode::kOffsets, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->extra.count("proven_optimal"));
  EXPECT_TRUE(plan->extra.count("nodes"));
  EXPECT_TRUE(plan->extra.count("seconds_to_best"));
  EXPECT_GE(plan->total_size, plan->lower_bound);
  EXPECT_LE(plan->total_size, GreedyTotal(set, 1));
}

TEST(LocalMovesTest, EjectsOneBlockerToLowerTheTop) {
  // T (tasks 1-2) is on top; every lower spot for it is blocked by exactly
  // one of X (tasks 2-3) or Y (tasks 0-1), each of which can move elsewhere.
  const std::vector<UsageRecord<>> records = {
      {.tensor_size = 2, .first_task = 2, .last_task = 3},   // X
      {.tensor_size = 2, .first_task = 0, .last_task = 1},   // Y
      {.tensor_size = 2, .first_task = 1, .last_task = 2}};  // T
  std::vector<uint64_t> offsets = {0, 2, 4};
  const uint64_t total = solver_internal::ImproveByLocalMoves(
      records, 1, offsets,
      std::chrono::steady_clock::now() + std::chrono::seconds(10));
  EXPECT_EQ(total, 4u);
  // T takes the bottom once one blocker (X or Y) moved into a gap below 6.
  EXPECT_LT(offsets[2], 4u);
  EXPECT_TRUE(CheckOffsets(records, {offsets, total}).ok());
}

TEST(OptimalPlannerTest, ParsesTimeLimits) {
  EXPECT_DOUBLE_EQ(*ParseTimeLimitSeconds("10"), 10);
  EXPECT_DOUBLE_EQ(*ParseTimeLimitSeconds("10s"), 10);
  EXPECT_DOUBLE_EQ(*ParseTimeLimitSeconds("500ms"), 0.5);
  EXPECT_DOUBLE_EQ(*ParseTimeLimitSeconds("1.5m"), 90);
  EXPECT_DOUBLE_EQ(*ParseTimeLimitSeconds("0"), 0);
  for (const char* bad : {"", "s", "-1s", "10x", "inf", "nan", "1e999"}) {
    EXPECT_FALSE(ParseTimeLimitSeconds(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace tensormem
