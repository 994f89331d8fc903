// The queue planner against every expected value of TFLite's 2019 arena
// planner tests (specs/tflite-arena.md §8.1).
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plan/arena_test_util.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;
using testing_arena::Events;
using testing_arena::ExpectValidPlan;
using testing_arena::FixtureGraph;
using testing_arena::GraphWithTemporaryAndOptionals;
using testing_arena::Offset;
using testing_arena::PlanAll;
using testing_arena::SimpleGraph;

ArenaPlannerOptions Queue(bool preserve_inputs = false) {
  ArenaPlannerOptions options =
      testing_arena::TestOptions(ArenaPlannerKind::kQueue);
  options.preserve_inputs = preserve_inputs;
  return options;
}

TEST(QueuePlannerTest, EmptyGraph) {
  ArenaGraph graph = FixtureGraph({}, {}, {});
  auto planner = PlanAll(&graph, Queue());
  EXPECT_EQ(planner->high_water_mark(), 0);
  EXPECT_EQ(planner->buffer_bytes(), 128);  // hwm + 2 * arena alignment
}

TEST(QueuePlannerTest, DeallocationOfInputTensor) {
  ArenaGraph graph = FixtureGraph({-1}, {}, {1});
  auto planner = PlanAll(&graph, Queue());
  EXPECT_EQ(Offset(*planner, 0), -1);
  EXPECT_EQ(Offset(*planner, 1), -1);
  EXPECT_EQ(planner->high_water_mark(), 0);
}

TEST(QueuePlannerTest, GraphWithNoOps) {
  ArenaGraph graph = FixtureGraph({0, 10}, {}, {5, 11});
  auto planner = PlanAll(&graph, Queue());
  EXPECT_EQ(Offset(*planner, 0), 0);
  EXPECT_EQ(Offset(*planner, 10), 4);
  for (int t : {1, 2, 3, 4, 5, 6, 7, 8, 9, 11})
    EXPECT_EQ(Offset(*planner, t), -1);
  EXPECT_EQ(planner->high_water_mark(), 37);
  EXPECT_EQ(Events(*planner), "+0 +10");
  ExpectValidPlan(*planner);
}

TEST(QueuePlannerTest, GraphWithOneOp) {
  ArenaGraph graph = FixtureGraph({1}, {{{1}, {2}}}, {2});
  auto planner = PlanAll(&graph, Queue());
  EXPECT_EQ(Offset(*planner, 0), -1);
  EXPECT_EQ(Offset(*planner, 1), 0);
  EXPECT_EQ(Offset(*planner, 2), 8);
  EXPECT_EQ(planner->high_water_mark(), 17);
  EXPECT_EQ(Events(*planner), "+1 +2 -1");
  ExpectValidPlan(*planner);
}

TEST(QueuePlannerTest, ZeroSizedTensors) {
  ArenaGraph graph = FixtureGraph({1}, {{{1}, {2}}}, {2});
  graph.tensors[1].bytes = 0;
  auto planner = PlanAll(&graph, Queue());
  EXPECT_EQ(graph.tensors[1].data, nullptr);
  EXPECT_EQ(Offset(*planner, 2), 0);
  EXPECT_EQ(planner->high_water_mark(), 9);
}

TEST(QueuePlannerTest, SimpleGraph) {
  ArenaGraph graph = SimpleGraph();
  auto planner = PlanAll(&graph, Queue());
  const std::vector<int64_t> expected = {0, 4, 12, 0, 24, 40};  // by tensor
  for (int t = 0; t < 6; ++t) EXPECT_EQ(Offset(*planner, t), expected[t]) << t;
  EXPECT_EQ(planner->high_water_mark(), 58);
  EXPECT_EQ(planner->buffer_bytes(), 58 + 128);
  EXPECT_EQ(Events(*planner), "+0 +1 +2 -1 +4 +5 -2 -0 +3 -4 -5");
  ExpectValidPlan(*planner);
}

TEST(QueuePlannerTest, SimpleGraphInputsPreserved) {
  ArenaGraph graph = SimpleGraph();
  auto planner = PlanAll(&graph, Queue(/*preserve_inputs=*/true));
  const std::vector<int64_t> expected = {0, 4, 12, 12, 24, 40};
  for (int t = 0; t < 6; ++t) EXPECT_EQ(Offset(*planner, t), expected[t]) << t;
  EXPECT_EQ(planner->high_water_mark(), 58);
  EXPECT_EQ(Events(*planner), "+0 +1 +2 +4 +5 -2 +3 -4 -5");
  ExpectValidPlan(*planner);
}

TEST(QueuePlannerTest, SimpleGraphWithTemporary) {
  ArenaGraph graph = FixtureGraph(
      {0, 1}, {{{0, 1}, {2}}, {{2, 0}, {4}, {5}}, {{4}, {3}}}, {3});
  auto planner = PlanAll(&graph, Queue());
  const std::vector<int64_t> expected = {0, 4, 12, 0, 44, 24};
  for (int t = 0; t < 6; ++t) EXPECT_EQ(Offset(*planner, t), expected[t]) << t;
  EXPECT_EQ(planner->high_water_mark(), 59);
  // Temporaries are not queue events (+5 before +4, -5 before +3 at run time).
  EXPECT_EQ(Events(*planner), "+0 +1 +2 -1 +4 -2 -0 +3 -4");
  ExpectValidPlan(*planner);
}

TEST(QueuePlannerTest, SimpleGraphWithOptionals) {
  ArenaGraph graph = FixtureGraph(
      {0, -1, 1}, {{{0, 1}, {2}}, {{2, 0}, {4, 5}}, {{4, -1, 5}, {3}}}, {3});
  auto planner = PlanAll(&graph, Queue());
  const std::vector<int64_t> expected = {0, 4, 12, 0, 24, 40};
  for (int t = 0; t < 6; ++t) EXPECT_EQ(Offset(*planner, t), expected[t]) << t;
  EXPECT_EQ(planner->high_water_mark(), 58);
}

TEST(QueuePlannerTest, SimpleGraphWithPersistentTensor) {
  ArenaGraph graph = GraphWithTemporaryAndOptionals(/*variables=*/{1});
  graph.tensors[1].type = AllocationType::kArenaRwPersistent;
  auto planner = PlanAll(&graph, Queue());
  EXPECT_NE(graph.tensors[0].data, graph.tensors[1].data);
  const std::vector<int64_t> expected = {0, 0, 4, 0, 36, 16};
  for (int t = 0; t < 6; ++t) EXPECT_EQ(Offset(*planner, t), expected[t]) << t;
  EXPECT_EQ(planner->Placement(1)->arena, ArenaId::kPersistent);
  EXPECT_EQ(planner->high_water_mark(), 51);
  EXPECT_EQ(planner->persistent_high_water_mark(), 6);
  EXPECT_THAT(Events(*planner), ::testing::Not(HasSubstr("-1")));
  ExpectValidPlan(*planner);
}

TEST(QueuePlannerTest, SimpleGraphWithDynamicTensor) {
  ArenaGraph graph = GraphWithTemporaryAndOptionals();
  graph.tensors[1].type = AllocationType::kDynamic;
  auto planner = PlanAll(&graph, Queue());
  EXPECT_EQ(graph.tensors[1].data, nullptr);
  const std::vector<int64_t> expected = {0, -1, 4, 0, 36, 16};
  for (int t = 0; t < 6; ++t) EXPECT_EQ(Offset(*planner, t), expected[t]) << t;
  EXPECT_EQ(planner->high_water_mark(), 51);
  ExpectValidPlan(*planner);
}

TEST(QueuePlannerTest, PreserveIntermediatesFreesNothing) {
  ArenaGraph graph = SimpleGraph();
  ArenaPlannerOptions options = Queue();
  options.preserve_intermediates = true;
  auto planner = PlanAll(&graph, options);
  EXPECT_EQ(Events(*planner), "+0 +1 +2 +4 +5 +3");
  EXPECT_EQ(planner->high_water_mark(), 72);  // 0@0 1@4 2@12 4@24 5@40 3@60
  ExpectValidPlan(*planner);
}

TEST(QueuePlannerTest, NodeWithoutEventsStopsLaterTemporaries) {
  // Node 1 writes nothing new and frees nothing, so (as in TFLite) the
  // temporaries of nodes 1 and 2 are never placed.
  ArenaGraph graph =
      FixtureGraph({0}, {{{0}, {1}}, {{1}, {}, {2}}, {{1}, {3}, {4}}}, {1, 3});
  auto planner = PlanAll(&graph, Queue());
  EXPECT_EQ(graph.tensors[2].data, nullptr);
  EXPECT_EQ(graph.tensors[4].data, nullptr);
  EXPECT_NE(graph.tensors[3].data, nullptr);
  ExpectValidPlan(*planner);
}

TEST(QueuePlannerTest, StepwiseExecutionMatchesOneShot) {
  ArenaGraph whole = GraphWithTemporaryAndOptionals();
  auto reference = PlanAll(&whole, Queue());
  ArenaGraph graph = GraphWithTemporaryAndOptionals();
  auto planner = testing_arena::MakePlanner(&graph, Queue());
  ASSERT_TRUE(planner->PlanAllocations().ok());
  for (int node = 0; node < 3; ++node) {
    ASSERT_TRUE(planner->ExecuteAllocations(node, node).ok());
    ExpectValidPlan(*planner);
  }
  for (int t = 0; t < 6; ++t) {
    EXPECT_EQ(Offset(*planner, t), Offset(*reference, t)) << t;
  }
  absl::Status again = planner->ExecuteAllocations(2, 2);
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.message(), HasSubstr("ResetAllocationsAfter(1)"));
}

TEST(QueuePlannerTest, ResetAfterReplaysTheSameOffsets) {
  ArenaGraph graph = GraphWithTemporaryAndOptionals();
  auto planner = PlanAll(&graph, Queue());
  std::vector<int64_t> before;
  for (int t = 0; t < 6; ++t) before.push_back(Offset(*planner, t));
  ASSERT_TRUE(planner->ResetAllocationsAfter(0).ok());
  EXPECT_NE(graph.tensors[0].data, nullptr);  // first used at node 0
  EXPECT_NE(graph.tensors[2].data, nullptr);
  EXPECT_EQ(graph.tensors[4].data, nullptr);  // first used at node 1
  EXPECT_EQ(graph.tensors[3].data, nullptr);
  ASSERT_TRUE(planner->ExecuteAllocations(1, 2).ok());
  for (int t = 0; t < 6; ++t) EXPECT_EQ(Offset(*planner, t), before[t]) << t;
  ExpectValidPlan(*planner);
}

TEST(QueuePlannerTest, ReleaseAndAcquireNonPersistentMemory) {
  ArenaGraph graph = GraphWithTemporaryAndOptionals(/*variables=*/{1});
  graph.tensors[1].type = AllocationType::kArenaRwPersistent;
  auto planner = PlanAll(&graph, Queue());
  char* persistent = graph.tensors[1].data;
  EXPECT_TRUE(planner->HasNonPersistentMemory());
  ASSERT_TRUE(planner->ReleaseNonPersistentMemory().ok());
  EXPECT_FALSE(planner->HasNonPersistentMemory());
  EXPECT_EQ(graph.tensors[0].data, nullptr);
  EXPECT_EQ(graph.tensors[1].data, persistent);
  ASSERT_TRUE(planner->AcquireNonPersistentMemory().ok());
  EXPECT_TRUE(planner->HasNonPersistentMemory());
  EXPECT_EQ(Offset(*planner, 4), 36);
  ExpectValidPlan(*planner);
}

}  // namespace
}  // namespace tensormem
