// How the optimal planner spends its nodes: the restart schedule, searches
// paused and resumed across questions, and cancellation.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "plan/solver/feasibility_search.h"
#include "plan/solver/parallel_search.h"
#include "plan/solver/problem.h"
#include "plan/solver/static_orders.h"
#include "plan/solver/suspended_search.h"
#include "shared_data.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/solver/optimal_planner.h"

namespace tensormem::solver_internal {
namespace {

Problem ChallengingProblem(const std::string& path) {
  absl::StatusOr<BufferSet> set = ReadBufferSetCsv(path);
  EXPECT_TRUE(set.ok()) << set.status();
  absl::StatusOr<Problem> problem = BuildProblem(*set, 1);
  EXPECT_TRUE(problem.ok()) << problem.status();
  BuildOverlaps(*problem);
  return *problem;
}

// Sums the base runs (per order) and the restarts of one question.
struct RunTotals {
  std::vector<int> runs_per_order = std::vector<int>(kBaseOrderCount, 0);
  std::vector<uint64_t> nodes_per_order =
      std::vector<uint64_t>(kBaseOrderCount, 0);
  uint64_t base_nodes = 0;
  uint64_t restart_nodes = 0;
};

RunTotals Totals(const std::vector<OrderRun>& runs, bool resume) {
  RunTotals totals;
  for (const OrderRun& run : runs) {
    if (run.order < kBaseOrderCount) {
      EXPECT_EQ(run.resume, resume);
      ++totals.runs_per_order[run.order];
      totals.nodes_per_order[run.order] += run.node_limit;
      totals.base_nodes += run.node_limit;
    } else {
      EXPECT_FALSE(run.resume);  // perturbed orders always start afresh
      EXPECT_EQ(run.node_limit % 1000, 0u);  // Luby multiples of the unit
      totals.restart_nodes += run.node_limit;
    }
  }
  return totals;
}

TEST(RestartScheduleTest,
     SlicesBaseOrdersRoundRobinAndGivesRestartsTheirShare) {
  RestartSchedule schedule(/*buffers=*/100);  // unit: 1,000 nodes
  const std::vector<OrderRun> first = schedule.Runs(20000, /*resume=*/true);
  const RunTotals totals = Totals(first, /*resume=*/true);
  for (int k = 0; k < kBaseOrderCount; ++k) {
    EXPECT_EQ(totals.runs_per_order[k], RestartSchedule::kSlices);
    EXPECT_EQ(totals.nodes_per_order[k], 20000u);  // no leader yet
  }
  const uint64_t share =
      totals.base_nodes * RestartSchedule::kRestartPercent / 100;
  EXPECT_GE(totals.restart_nodes, share);
  EXPECT_LT(totals.restart_nodes, share + 16 * 1000);
  // Round robin: every order has its first slice before any its second.
  std::vector<int> seen;
  for (const OrderRun& run : first) {
    if (run.order < kBaseOrderCount && seen.size() < kBaseOrderCount)
      seen.push_back(run.order);
  }
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_LT(first.front().order, kBaseOrderCount);  // a base order first

  // Order 3 placed the most buffers, 40 more than any other of 100: it gets
  // twice the nodes next time.
  FeasibilityAnswer answer;
  answer.deepest.assign(first.size(), 10);
  for (size_t k = 0; k < first.size(); ++k) {
    if (first[k].order == 3) answer.deepest[k] = 50;
  }
  schedule.Record(first, answer);
  const std::vector<OrderRun> second = schedule.Runs(40000, true);
  const RunTotals next = Totals(second, true);
  for (int k = 0; k < kBaseOrderCount; ++k)
    EXPECT_EQ(next.nodes_per_order[k], k == 3 ? 80000u : 40000u);
  int last_restart = 0;
  for (const OrderRun& run : first)
    last_restart = std::max(last_restart, run.order);
  for (const OrderRun& run : second) {
    if (run.order >= kBaseOrderCount) {
      EXPECT_GT(run.order, last_restart);
    }
  }
}

TEST(RestartScheduleTest, ANarrowLeadEarnsNoExtraNodes) {
  // Of 100 buffers, order 3 placed 15 and the others 10: a lead under a
  // tenth of the buffers, so every order gets the same nodes.
  RestartSchedule schedule(/*buffers=*/100);
  const std::vector<OrderRun> first = schedule.Runs(20000, /*resume=*/true);
  FeasibilityAnswer answer;
  answer.deepest.assign(first.size(), 10);
  for (size_t k = 0; k < first.size(); ++k) {
    if (first[k].order == 3) answer.deepest[k] = 15;
  }
  schedule.Record(first, answer);
  const RunTotals next = Totals(schedule.Runs(40000, true), true);
  for (int k = 0; k < kBaseOrderCount; ++k)
    EXPECT_EQ(next.nodes_per_order[k], 40000u) << k;
}

// A plan needs one node per buffer and one more; the first round's slices
// must hold that and some backtracking, at any size.
TEST(RestartScheduleTest, FirstRoundSlicesHoldADescentThroughEveryBuffer) {
  for (const size_t buffers : {10u, 300u, 1000u, 3907u, 8192u}) {
    RestartSchedule schedule(buffers);
    for (const OrderRun& run : schedule.Runs(
             RestartSchedule::FirstNodeLimit(buffers), /*resume=*/true)) {
      if (run.order < kBaseOrderCount) {
        EXPECT_GE(run.node_limit, buffers + buffers / 2 + 1)
            << buffers << " buffers";
      }
    }
  }
}

TEST(RestartScheduleTest, WithoutResumingEachBaseOrderRunsOnceInFull) {
  RestartSchedule schedule(/*buffers=*/100);
  const RunTotals totals = Totals(schedule.Runs(8000, /*resume=*/false), false);
  for (int k = 0; k < kBaseOrderCount; ++k) {
    EXPECT_EQ(totals.runs_per_order[k], 1);
    EXPECT_EQ(totals.nodes_per_order[k], 8000u);
  }
}

TEST(SuspendedSearchTest, SlicesFindWhatOneRunFinds) {
  // Order 0 packs challenging A in about 19k nodes; in slices of 1,000 the
  // same search must reach the same placement after the same nodes.
  TENSORMEM_SHARED_DATA_OR_SKIP(path, "minimalloc/challenging/A.1048576.csv");
  const Problem problem = ChallengingProblem(path);
  FeasibilitySearch whole(problem, 0);
  ASSERT_EQ(whole.Run(1048576, {.node_limit = 200000}), SearchOutcome::kFound);
  SuspendedSearch sliced(problem, 0, 1048576,
                         std::chrono::steady_clock::time_point::max(),
                         /*stop=*/nullptr, /*cancel=*/nullptr);
  uint64_t nodes = 0;
  int slices = 0;
  SuspendedSearch::Slice slice;
  do {
    slice = sliced.Resume(1000);
    nodes += slice.nodes;
    ++slices;
  } while (slice.outcome == SearchOutcome::kStopped && slices < 1000);
  ASSERT_EQ(slice.outcome, SearchOutcome::kFound);
  EXPECT_GT(slices, 10);
  EXPECT_EQ(slice.offsets, whole.offsets());
  EXPECT_NEAR(static_cast<double>(nodes), static_cast<double>(whole.nodes()),
              slices);
  // Once finished it keeps its answer.
  EXPECT_EQ(sliced.Resume(1000).outcome, SearchOutcome::kFound);
}

TEST(KeptSearchesTest, QuestionsAtOneCapacityExtendTheSameSearch) {
  // Two questions at A's capacity, order 0 kept: the second goes on where
  // the first stopped, so together they cost what one run costs (about 19k
  // nodes). At another capacity the kept search is dropped and starts over.
  TENSORMEM_SHARED_DATA_OR_SKIP(path, "minimalloc/challenging/A.1048576.csv");
  const Problem problem = ChallengingProblem(path);
  FeasibilitySearch whole(problem, 0);
  ASSERT_EQ(whole.Run(1048576, {}), SearchOutcome::kFound);
  KeptSearches kept(problem);
  FeasibilityRequest first{
      .capacity = 1048576,
      .runs = {{.order = 0, .node_limit = 10000, .resume = true}},
      .kept = &kept};
  const FeasibilityAnswer stopped = RunFeasibility(problem, first);
  EXPECT_EQ(stopped.outcome, SearchOutcome::kStopped);
  FeasibilityRequest second = first;
  second.runs[0].node_limit = 100000;
  const FeasibilityAnswer found = RunFeasibility(problem, second);
  ASSERT_EQ(found.outcome, SearchOutcome::kFound);
  EXPECT_EQ(found.offsets, whole.offsets());
  EXPECT_NEAR(static_cast<double>(stopped.nodes + found.nodes),
              static_cast<double>(whole.nodes()), 2);

  FeasibilityRequest other = first;
  other.capacity = 1048576 + 1024;
  other.runs[0].node_limit = 5;
  const FeasibilityAnswer fresh = RunFeasibility(problem, other);
  EXPECT_EQ(fresh.outcome, SearchOutcome::kStopped);
  EXPECT_LE(fresh.deepest[0], 5);  // a resumed search would be deep already
  EXPECT_GT(stopped.deepest[0], 5);
}

TEST(SuspendedSearchTest, PausedSearchesAreDroppedCleanly) {
  // Destroying searches paused deep in their trees must not hang or leak.
  TENSORMEM_SHARED_DATA_OR_SKIP(path, "minimalloc/challenging/B.1048576.csv");
  const Problem problem = ChallengingProblem(path);
  for (int order = 0; order < kBaseOrderCount; ++order) {
    SuspendedSearch search(problem, order, 1048576,
                           std::chrono::steady_clock::time_point::max(),
                           nullptr, nullptr);
    EXPECT_EQ(search.Resume(500).outcome, SearchOutcome::kStopped);
  }
}

TEST(OptimalPlannerCancelTest, ACancelledSearchReturnsTheBestPlanSoFar) {
  TENSORMEM_SHARED_DATA_OR_SKIP(path, "minimalloc/challenging/D.1048576.csv");
  absl::StatusOr<BufferSet> set = ReadBufferSetCsv(path);
  ASSERT_TRUE(set.ok());
  std::atomic<bool> cancel{false};
  OptimalPlanOptions options;
  options.time_limit_seconds = 600;
  options.cancel = &cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel.store(true);
  });
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<OptimalPlanResult> result = PlanOptimal(*set, options);
  canceller.join();
  // D's bound is not reached in 600 s: only the cancel ends it this early.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_LE(result->total_size, result->start_size);
  EXPECT_TRUE(CheckPlacement(result->placed).ok());
}

}  // namespace
}  // namespace tensormem::solver_internal
