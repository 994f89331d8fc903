// The usage examples of the plan layer's public headers, compiled and run.
// Each test opens with its header's example as the header writes it (keep the
// two in sync; repository paths are taken from the source tree), then checks
// what the example promises.
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "repo_path.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/plan/arena/arena_graph.h"
#include "tensormem/plan/arena/arena_planner.h"
#include "tensormem/plan/arena/simple_memory_arena.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/solver/optimal_planner.h"
#include "tensormem/plan/strategy_comparison.h"
#include "tensormem/plan/strategy_registry.h"

namespace tensormem {
namespace {

absl::Status StrategyRegistryExample() {
  const std::string path = RepoPath("data/models/resnet18.buffers.csv");
  TM_ASSIGN_OR_RETURN(BufferSet set, ReadBufferSetCsv(path));
  PlanOptions options;
  options.alignment = 64;
  TM_ASSIGN_OR_RETURN(
      PlanResult plan,
      RunStrategy("best_fit_multi", set, PlanMode::kOffsets, options));
  double quality = plan.Ratio();  // total_size / lower_bound

  EXPECT_GE(quality, 1.0);
  EXPECT_EQ(plan.offsets.size(), set.buffers.size());
  for (uint64_t offset : plan.offsets) EXPECT_EQ(offset % 64, 0u);
  return absl::OkStatus();
}

TEST(PlanExamples, StrategyRegistry) {
  EXPECT_EQ(StrategyRegistryExample(), absl::OkStatus());
}

absl::Status StrategyComparisonExample() {
  TM_ASSIGN_OR_RETURN(
      BufferSet set,
      ReadBufferSetCsv(RepoPath("data/models/resnet18.buffers.csv")));
  TM_ASSIGN_OR_RETURN(StrategyComparison table,
                      CompareStrategies(set, PlanMode::kOffsets, {}));
  const PlanResult& best = *table.entries[*table.best].plan;

  for (const StrategyComparison::Entry& entry : table.entries) {
    if (entry.plan) {
      EXPECT_LE(best.total_size, entry.plan->total_size);
    }
  }
  EXPECT_GE(best.total_size, table.lower_bound);
  return absl::OkStatus();
}

TEST(PlanExamples, StrategyComparison) {
  EXPECT_EQ(StrategyComparisonExample(), absl::OkStatus());
}

absl::Status OptimalPlannerExample() {
  TM_ASSIGN_OR_RETURN(
      BufferSet set,
      ReadBufferSetCsv(RepoPath("data/models/resnet18.buffers.csv")));
  OptimalPlanOptions options;
  options.time_limit_seconds = 10;
  options.threads = 2;
  TM_ASSIGN_OR_RETURN(OptimalPlanResult result, PlanOptimal(set, options));
  // result.placed has every offset; result.proven_optimal says whether
  // result.total_size is the optimum.

  EXPECT_TRUE(result.proven_optimal);  // 31 buffers: proven in milliseconds
  EXPECT_GE(result.total_size, result.lower_bound);
  for (const Buffer& buffer : result.placed.buffers) {
    EXPECT_TRUE(buffer.offset.has_value());
    EXPECT_LE(*buffer.offset + buffer.size, result.total_size);
  }
  return absl::OkStatus();
}

TEST(PlanExamples, OptimalPlanner) {
  EXPECT_EQ(OptimalPlannerExample(), absl::OkStatus());
}

TEST(PlanExamples, SimpleMemoryArena) {
  SimpleMemoryArena arena({.generation = ArenaGeneration::kGreedy});
  absl::StatusOr<ArenaAlloc> a = arena.Allocate(2047, /*alignment=*/32,
                                                /*tensor=*/0, 1, 3);
  absl::StatusOr<bool> moved = arena.Commit();
  absl::StatusOr<char*> ptr = arena.Resolve(*a);

  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->size, 2047u);
  ASSERT_TRUE(moved.ok()) << moved.status();
  ASSERT_TRUE(ptr.ok()) << ptr.status();
  EXPECT_NE(*ptr, nullptr);
}

absl::Status ArenaPlannerExample() {
  TM_ASSIGN_OR_RETURN(  // the graph must outlive the planner
      ArenaGraph graph,
      ReadArenaGraphJson(RepoPath("tests/data/arena/simple_graph.json")));
  const int num_nodes = static_cast<int>(graph.nodes.size());
  absl::StatusOr<std::unique_ptr<ArenaPlanner>> planner =
      ArenaPlanner::Create(&graph, {.planner = ArenaPlannerKind::kGreedy});
  TM_RETURN_IF_ERROR(planner.status());
  TM_RETURN_IF_ERROR((*planner)->PlanAllocations());
  TM_RETURN_IF_ERROR((*planner)->ExecuteAllocations(0, num_nodes - 1));
  // graph.tensors[i].data now points into the arena.

  for (const ArenaTensor& tensor : graph.tensors) {
    EXPECT_NE(tensor.data, nullptr);
  }
  EXPECT_GT((*planner)->high_water_mark(), 0u);
  return absl::OkStatus();
}

TEST(PlanExamples, ArenaPlanner) {
  EXPECT_EQ(ArenaPlannerExample(), absl::OkStatus());
}

}  // namespace
}  // namespace tensormem
