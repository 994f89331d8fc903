// The greedy planner against every expected value of TFLite's current arena
// planner tests (specs/tflite-arena.md §8.3), then incremental execution,
// resets and releasing memory.
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plan/arena_test_util.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;
using testing_arena::ExpectValidPlan;
using testing_arena::FixtureGraph;
using testing_arena::GraphWithTemporaryAndOptionals;
using testing_arena::Offset;
using testing_arena::PlanAll;
using testing_arena::SimpleGraph;

ArenaPlannerOptions Greedy() {
  return testing_arena::TestOptions(ArenaPlannerKind::kGreedy);
}

void ExpectOffsets(const ArenaPlanner& planner,
                   const std::vector<int64_t>& expected) {
  for (size_t t = 0; t < expected.size(); ++t) {
    EXPECT_EQ(Offset(planner, t), expected[t]) << "tensor " << t;
  }
}

TEST(GreedyPlannerTest, EmptyGraph) {
  ArenaGraph graph = FixtureGraph({}, {}, {});
  auto planner = testing_arena::MakePlanner(&graph, Greedy());
  ASSERT_TRUE(planner->PlanAllocations().ok());
  ASSERT_TRUE(planner->ExecuteAllocations(0, -1).ok());
  EXPECT_EQ(planner->high_water_mark(), 0);
  EXPECT_EQ(planner->buffer_bytes(), 0);
}

TEST(GreedyPlannerTest, GraphWithOneOp) {
  ArenaGraph graph = FixtureGraph({1}, {{{1}, {2}}}, {2});
  auto planner = PlanAll(&graph, Greedy());
  ExpectOffsets(*planner, {-1, 0, 8});
  EXPECT_EQ(planner->high_water_mark(), 17);
  EXPECT_EQ(planner->buffer_bytes(), 17);
  ExpectValidPlan(*planner);
}

TEST(GreedyPlannerTest, SimpleGraph) {
  ArenaGraph graph = SimpleGraph();
  auto planner = PlanAll(&graph, Greedy());
  ExpectOffsets(*planner, {0, 4, 48, 48, 32, 12});
  EXPECT_EQ(planner->high_water_mark(), 60);
  EXPECT_EQ(planner->buffer_bytes(), 60);
  ExpectValidPlan(*planner);
}

TEST(GreedyPlannerTest, InputsArePreservedWhetherAskedOrNot) {
  ArenaGraph graph = SimpleGraph();
  ArenaPlannerOptions options = Greedy();
  options.preserve_inputs = true;
  auto planner = PlanAll(&graph, options);
  ExpectOffsets(*planner, {0, 4, 48, 48, 32, 12});
}

TEST(GreedyPlannerTest, AllocsCorrectlyReset) {
  ArenaGraph graph = SimpleGraph();
  auto planner = PlanAll(&graph, Greedy());
  ASSERT_TRUE(planner->ResetAllocations().ok());
  ASSERT_TRUE(planner->ExecuteAllocations(0, 2).ok());
  ExpectOffsets(*planner, {0, 4, 48, 48, 32, 12});
  EXPECT_EQ(planner->high_water_mark(), 60);
}

TEST(GreedyPlannerTest, SimpleGraphWithTemporary) {
  ArenaGraph graph = FixtureGraph(
      {0, 1}, {{{0, 1}, {2}}, {{2, 0}, {4}, {5}}, {{4}, {3}}}, {3});
  auto planner = PlanAll(&graph, Greedy());
  ExpectOffsets(*planner, {0, 4, 48, 12, 32, 12});
  EXPECT_EQ(planner->high_water_mark(), 57);
  ExpectValidPlan(*planner);
}

TEST(GreedyPlannerTest, SimpleGraphWithInplaceReshape) {
  ArenaGraph graph = FixtureGraph(
      {0, 1}, {{{0}, {2}}, {{1}, {3}}, {{2, 3}, {4}}, {{4}, {5}}}, {5});
  graph.nodes[2].inplace = {.inputs = {0}, .data_unmodified = true};
  graph.tensors[2].bytes = 24;
  graph.tensors[4].bytes = 24;
  auto planner = PlanAll(&graph, Greedy());
  ExpectOffsets(*planner, {0, 4, 12, 36, 12, 36});
  EXPECT_EQ(graph.tensors[4].data, graph.tensors[2].data);
  EXPECT_EQ(planner->Placement(4)->shares_with, 2);
  EXPECT_EQ(planner->high_water_mark(), 54);
  ExpectValidPlan(*planner);
}

TEST(GreedyPlannerTest, ModifyingOpSharesOnlyASoleSameSizedInput) {
  // [0]->[1]; [1]->[2] (ADD, input 0 shared); [2]->[3]. Tensor 1 is read only
  // by node 1 and has the output's size: 2 reuses it, 1's lifetime grows.
  ArenaGraph graph =
      FixtureGraph({0}, {{{0}, {1}}, {{1}, {2}}, {{2}, {3}}}, {3});
  graph.tensors[1].bytes = graph.tensors[2].bytes = 64;
  auto planner = PlanAll(&graph, Greedy());
  EXPECT_EQ(graph.tensors[2].data, graph.tensors[1].data);
  ExpectValidPlan(*planner);
  // Read twice (by nodes 1 and 2), it must not be overwritten in place.
  ArenaGraph read_twice =
      FixtureGraph({0}, {{{0}, {1}}, {{1}, {2}}, {{2, 1}, {3}}}, {3});
  read_twice.tensors[1].bytes = read_twice.tensors[2].bytes = 64;
  auto other = PlanAll(&read_twice, Greedy());
  EXPECT_NE(read_twice.tensors[2].data, read_twice.tensors[1].data);
  ExpectValidPlan(*other);
  // preserve_all_tensors turns sharing off.
  ArenaPlannerOptions keep = Greedy();
  keep.preserve_all_tensors = true;
  ArenaGraph kept =
      FixtureGraph({0}, {{{0}, {1}}, {{1}, {2}}, {{2}, {3}}}, {3});
  kept.tensors[1].bytes = kept.tensors[2].bytes = 64;
  auto preserved = PlanAll(&kept, keep);
  EXPECT_NE(kept.tensors[2].data, kept.tensors[1].data);
  ExpectValidPlan(*preserved);
}

TEST(GreedyPlannerTest, SimpleGraphWithOptionals) {
  ArenaGraph graph = FixtureGraph(
      {0, -1, 1}, {{{0, 1}, {2}}, {{2, 0}, {4, 5}}, {{4, -1, 5}, {3}}}, {3});
  auto planner = PlanAll(&graph, Greedy());
  ExpectOffsets(*planner, {0, 4, 48, 48, 32, 12});
  EXPECT_EQ(planner->high_water_mark(), 60);
}

TEST(GreedyPlannerTest, SimpleGraphWithPersistentTensor) {
  ArenaGraph graph = GraphWithTemporaryAndOptionals(/*variables=*/{1});
  graph.tensors[1].type = AllocationType::kArenaRwPersistent;
  auto planner = PlanAll(&graph, Greedy());
  EXPECT_NE(graph.tensors[0].data, graph.tensors[1].data);
  ExpectOffsets(*planner, {0, 0, 40, 4, 24, 4});
  EXPECT_EQ(planner->Placement(1)->arena, ArenaId::kPersistent);
  EXPECT_EQ(planner->high_water_mark(), 49);
  ExpectValidPlan(*planner);
}

TEST(GreedyPlannerTest, StepwiseExecutionKeepsEarlierOffsets) {
  ArenaGraph graph = GraphWithTemporaryAndOptionals();
  auto planner = testing_arena::MakePlanner(&graph, Greedy());
  ASSERT_TRUE(planner->PlanAllocations().ok());
  std::vector<std::optional<TensorPlacement>> seen(graph.tensors.size());
  for (int node = 0; node < 3; ++node) {
    ASSERT_TRUE(planner->ExecuteAllocations(node, node).ok());
    ExpectValidPlan(*planner);
    for (size_t t = 0; t < seen.size(); ++t) {
      std::optional<TensorPlacement> now = planner->Placement(t);
      if (seen[t]) {
        ASSERT_TRUE(now.has_value()) << t;
        EXPECT_EQ(now->offset, seen[t]->offset) << "tensor " << t;
      }
      seen[t] = now;
    }
  }
  for (int t : {0, 1, 2, 3, 4, 5}) EXPECT_TRUE(seen[t].has_value()) << t;
}

TEST(GreedyPlannerTest, ResetAfterForgetsLaterTensorsOnly) {
  ArenaGraph graph = GraphWithTemporaryAndOptionals();
  auto planner = PlanAll(&graph, Greedy());
  const int64_t offset0 = Offset(*planner, 0);
  const int64_t offset2 = Offset(*planner, 2);
  ASSERT_TRUE(planner->ResetAllocationsAfter(0).ok());
  EXPECT_EQ(graph.tensors[3].data, nullptr);
  EXPECT_EQ(graph.tensors[4].data, nullptr);
  EXPECT_EQ(graph.tensors[5].data, nullptr);
  EXPECT_FALSE(planner->Placement(4).has_value());
  // A kernel resized tensor 4 while running node 0: plan the rest again.
  graph.tensors[4].bytes = 100;
  ASSERT_TRUE(planner->ExecuteAllocations(1, 2).ok());
  EXPECT_EQ(Offset(*planner, 0), offset0);
  EXPECT_EQ(Offset(*planner, 2), offset2);
  EXPECT_EQ(planner->Placement(4)->size, 100);
  ExpectValidPlan(*planner);
}

TEST(GreedyPlannerTest, ReleaseAndAcquireNonPersistentMemory) {
  ArenaGraph graph = GraphWithTemporaryAndOptionals(/*variables=*/{1});
  graph.tensors[1].type = AllocationType::kArenaRwPersistent;
  auto planner = PlanAll(&graph, Greedy());
  char* persistent = graph.tensors[1].data;
  EXPECT_TRUE(planner->HasNonPersistentMemory());
  ASSERT_TRUE(planner->ReleaseNonPersistentMemory().ok());
  EXPECT_FALSE(planner->HasNonPersistentMemory());
  EXPECT_EQ(planner->buffer_bytes(), 0);
  EXPECT_EQ(graph.tensors[4].data, nullptr);
  EXPECT_EQ(graph.tensors[1].data, persistent);
  ASSERT_TRUE(planner->AcquireNonPersistentMemory().ok());
  EXPECT_TRUE(planner->HasNonPersistentMemory());
  ExpectOffsets(*planner, {0, 0, 40, 4, 24, 4});
}

TEST(GreedyPlannerTest, TemporariesAddedAfterPlanningAreHonoured) {
  ArenaGraph graph = SimpleGraph();
  auto planner = testing_arena::MakePlanner(&graph, Greedy());
  ASSERT_TRUE(planner->PlanAllocations().ok());
  graph.tensors.push_back({.bytes = 100});  // tensor 6, created by node 1
  graph.nodes[1].temporaries.push_back(6);
  ASSERT_TRUE(planner->ExecuteAllocations(0, 2).ok());
  ASSERT_TRUE(planner->Placement(6).has_value());
  EXPECT_EQ(planner->Placement(6)->first_node, 1);
  EXPECT_EQ(planner->Placement(6)->last_node, 1);
  ExpectValidPlan(*planner);
}

TEST(GreedyPlannerTest, InPlaceChainsShareTheFirstOwnersBuffer) {
  // [0]->[1]; [1]->[2]; [2]->[3]; [3]->[4], every op in place on input 0.
  ArenaGraph graph =
      FixtureGraph({0}, {{{0}, {1}}, {{1}, {2}}, {{2}, {3}}, {{3}, {4}}}, {4});
  for (ArenaTensor& t : graph.tensors) t.bytes = 256;
  auto planner = PlanAll(&graph, Greedy());
  EXPECT_EQ(planner->Placement(2)->shares_with, 1);
  EXPECT_EQ(planner->Placement(3)->shares_with, 1);  // not 2: chains collapse
  EXPECT_EQ(graph.tensors[3].data, graph.tensors[1].data);
  // The owner lives until its last alias is read (node 3).
  EXPECT_EQ(planner->Placement(1)->last_node, 3);
  EXPECT_NE(graph.tensors[4].data, graph.tensors[1].data);  // a graph output
  ExpectValidPlan(*planner);
}

TEST(GreedyPlannerTest, SharingEndsWhenSizesDivergeAfterPlanning) {
  ArenaGraph graph =
      FixtureGraph({0}, {{{0}, {1}}, {{1}, {2}}, {{2}, {3}}}, {3});
  graph.tensors[1].bytes = graph.tensors[2].bytes = 64;
  auto planner = testing_arena::MakePlanner(&graph, Greedy());
  ASSERT_TRUE(planner->PlanAllocations().ok());
  graph.tensors[2].bytes = 128;  // e.g. an input was resized to broadcast
  ASSERT_TRUE(planner->ExecuteAllocations(0, 2).ok());
  EXPECT_NE(graph.tensors[2].data, graph.tensors[1].data);
  EXPECT_EQ(planner->Placement(2)->shares_with, -1);
  EXPECT_EQ(planner->Placement(2)->size, 128);
  ExpectValidPlan(*planner);
}

TEST(GreedyPlannerTest, TypeChangesAfterPlanningAreHonoured) {
  for (ArenaPlannerKind kind :
       {ArenaPlannerKind::kGreedy, ArenaPlannerKind::kQueue}) {
    ArenaGraph graph = SimpleGraph();
    auto planner =
        testing_arena::MakePlanner(&graph, testing_arena::TestOptions(kind));
    ASSERT_TRUE(planner->PlanAllocations().ok());
    graph.tensors[4].type = AllocationType::kDynamic;  // too large for arenas
    ASSERT_TRUE(planner->ExecuteAllocations(0, 2).ok());
    EXPECT_EQ(graph.tensors[4].data, nullptr);
    EXPECT_FALSE(planner->Placement(4).has_value());
    EXPECT_NE(graph.tensors[5].data, nullptr);
    ExpectValidPlan(*planner);
  }
}

TEST(ArenaPlannerMisuseTest, ClearErrorsInsteadOfUndefinedBehaviour) {
  ArenaGraph graph = SimpleGraph();
  auto planner = testing_arena::MakePlanner(&graph, Greedy());
  EXPECT_THAT(planner->ExecuteAllocations(0, 2).message(),
              HasSubstr("PlanAllocations"));
  ASSERT_TRUE(planner->PlanAllocations().ok());
  absl::Status past_end = planner->ExecuteAllocations(0, 3);
  EXPECT_EQ(past_end.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(past_end.message(), HasSubstr("[0, 3]"));
  EXPECT_FALSE(planner->ExecuteAllocations(-1, 1).ok());

  ArenaGraph optional_output = SimpleGraph();
  optional_output.outputs = {3, -1};
  auto bad = testing_arena::MakePlanner(&optional_output, Greedy());
  EXPECT_THAT(
      bad->PlanAllocations().message(),
      HasSubstr("outputs[1] = -1: an optional tensor (-1) is not allowed"));

  ArenaGraph produced_twice = SimpleGraph();
  produced_twice.nodes[2].temporaries = {2};
  auto twice = testing_arena::MakePlanner(&produced_twice, Greedy());
  EXPECT_THAT(twice->PlanAllocations().message(),
              HasSubstr("tensor 2 is listed by both nodes[0].outputs and "
                        "nodes[2].temporaries"));

  ArenaGraph unknown = SimpleGraph();
  unknown.nodes[1].inputs.push_back(17);
  EXPECT_THAT(ValidateArenaGraph(unknown).message(),
              HasSubstr("nodes[1].inputs[2] = 17: no such tensor"));
}

TEST(ArenaPlannerMisuseTest, TensorsAppendedBetweenCallsAreSafeEverywhere) {
  for (ArenaPlannerKind kind :
       {ArenaPlannerKind::kGreedy, ArenaPlannerKind::kQueue}) {
    ArenaGraph graph = SimpleGraph();
    auto planner = PlanAll(&graph, testing_arena::TestOptions(kind));
    graph.tensors.push_back({.bytes = 40});
    EXPECT_FALSE(planner->Placement(6).has_value());
    ASSERT_TRUE(planner->ResetAllocationsAfter(0).ok());
    ASSERT_TRUE(planner->ReleaseNonPersistentMemory().ok());
    ASSERT_TRUE(planner->AcquireNonPersistentMemory().ok());
    ASSERT_TRUE(planner->ResetAllocations().ok());
    graph.tensors.push_back({.bytes = 40});
    ASSERT_TRUE(planner->AcquireNonPersistentMemory().ok());
    ASSERT_TRUE(planner->ExecuteAllocations(0, 2).ok());
    ExpectValidPlan(*planner);
  }
}

TEST(ArenaPlannerMisuseTest, OptionsAreChecked) {
  ArenaGraph graph = SimpleGraph();
  ArenaPlannerOptions options = Greedy();
  options.tensor_alignment = 128;
  EXPECT_FALSE(ArenaPlanner::Create(&graph, options).ok());
  options.tensor_alignment = 12;
  EXPECT_FALSE(ArenaPlanner::Create(&graph, options).ok());
  options = Greedy();
  options.preserve_intermediates = true;
  EXPECT_FALSE(ArenaPlanner::Create(&graph, options).ok());
  options = testing_arena::TestOptions(ArenaPlannerKind::kQueue);
  options.preserve_all_tensors = true;
  EXPECT_FALSE(ArenaPlanner::Create(&graph, options).ok());
}

TEST(ArenaPlannerMisuseTest, OverflowingTensorSizesFailCleanly) {
  for (ArenaPlannerKind kind :
       {ArenaPlannerKind::kGreedy, ArenaPlannerKind::kQueue}) {
    ArenaGraph graph = SimpleGraph();
    graph.tensors[0].bytes = std::numeric_limits<size_t>::max() / 2 + 1;
    graph.tensors[1].bytes = std::numeric_limits<size_t>::max() / 2 + 1;
    ArenaPlannerOptions options = testing_arena::TestOptions(kind);
    options.callbacks = ReservedAddressSpaceCallbacks();
    auto planner = testing_arena::MakePlanner(&graph, options);
    ASSERT_TRUE(planner->PlanAllocations().ok());
    absl::Status status = planner->ExecuteAllocations(0, 2);
    EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange) << status;
    EXPECT_THAT(status.message(), HasSubstr("overflows"));
  }
}

}  // namespace
}  // namespace tensormem
