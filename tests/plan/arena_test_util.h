// Helpers shared by the arena planner tests: TFLite's test fixture graphs
// (tensor i has (i + 1) * 3 bytes, every node an ADD that may share input 0)
// and pointer-based offsets as TFLite's tests read them.
#ifndef TENSORMEM_TESTS_PLAN_ARENA_TEST_UTIL_H_
#define TENSORMEM_TESTS_PLAN_ARENA_TEST_UTIL_H_

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tensormem/plan/arena/arena_plan_export.h"
#include "tensormem/plan/arena/arena_planner.h"
#include "tensormem/plan/checker.h"

namespace tensormem::testing_arena {

struct TestNode {
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::vector<int> temporaries = {};
};

// Tensors 0..(largest index named), all arena_rw with (i + 1) * 3 bytes.
// Every node declares that input 0 may be overwritten in place by output 0.
inline ArenaGraph FixtureGraph(std::vector<int> inputs,
                               std::vector<TestNode> nodes,
                               std::vector<int> outputs,
                               std::vector<int> variables = {}) {
  int largest = -1;
  auto see = [&](const std::vector<int>& list) {
    for (int t : list) largest = std::max(largest, t);
  };
  see(inputs);
  see(outputs);
  see(variables);
  ArenaGraph graph;
  for (const TestNode& n : nodes) {
    see(n.inputs);
    see(n.outputs);
    see(n.temporaries);
    graph.nodes.push_back({.inputs = n.inputs,
                           .outputs = n.outputs,
                           .temporaries = n.temporaries,
                           .inplace = {.inputs = {0}}});
  }
  for (int i = 0; i <= largest; ++i) {
    graph.tensors.push_back({.bytes = static_cast<size_t>(i + 1) * 3});
  }
  graph.inputs = std::move(inputs);
  graph.outputs = std::move(outputs);
  graph.variables = std::move(variables);
  return graph;
}

// The SimpleGraph of TFLite's tests: in[0,1]; [0,1]->[2]; [2,0]->[4,5];
// [4,5]->[3]; out[3].
inline ArenaGraph SimpleGraph() {
  return FixtureGraph({0, 1}, {{{0, 1}, {2}}, {{2, 0}, {4, 5}}, {{4, 5}, {3}}},
                      {3});
}

// Optional (-1) inputs and a temporary: in[0,-1,1]; [0,1]->[2];
// [2,0]->[4] t[5]; [4,-1]->[3]; out[3].
inline ArenaGraph GraphWithTemporaryAndOptionals(
    std::vector<int> variables = {}) {
  return FixtureGraph({0, -1, 1},
                      {{{0, 1}, {2}}, {{2, 0}, {4}, {5}}, {{4, -1}, {3}}}, {3},
                      variables);
}

inline ArenaPlannerOptions TestOptions(ArenaPlannerKind kind) {
  return {.planner = kind, .tensor_alignment = 4};
}

inline std::unique_ptr<ArenaPlanner> MakePlanner(ArenaGraph* graph,
                                                 ArenaPlannerOptions options) {
  absl::StatusOr<std::unique_ptr<ArenaPlanner>> planner =
      ArenaPlanner::Create(graph, std::move(options));
  EXPECT_TRUE(planner.ok()) << planner.status();
  return planner.ok() ? *std::move(planner) : nullptr;
}

// Plans and executes every node.
inline std::unique_ptr<ArenaPlanner> PlanAll(ArenaGraph* graph,
                                             ArenaPlannerOptions options) {
  std::unique_ptr<ArenaPlanner> planner =
      MakePlanner(graph, std::move(options));
  if (planner == nullptr) return nullptr;
  absl::Status s = planner->PlanAllocations();
  EXPECT_TRUE(s.ok()) << s;
  const int last = std::max<int>(graph->nodes.size(), 1) - 1;
  s = planner->ExecuteAllocations(0, last);
  EXPECT_TRUE(s.ok()) << s;
  return planner;
}

// data - base of the tensor's arena, as TFLite's tests compute it; -1 = null.
inline int64_t Offset(const ArenaPlanner& planner, int tensor) {
  const ArenaTensor& t = planner.graph().tensors[tensor];
  if (t.data == nullptr) return -1;
  return static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.data) -
                              planner.BasePointer(t.type));
}

// "+0 +1 -1": the queue planner's events.
inline std::string Events(const ArenaPlanner& planner) {
  std::vector<std::string> parts;
  for (const ArenaQueueEvent& e : planner.QueueEvents()) {
    parts.push_back((e.allocate ? "+" : "-") + std::to_string(e.tensor));
  }
  return absl::StrJoin(parts, " ");
}

// Both arenas hold valid placements and every pointer matches its placement.
inline void ExpectValidPlan(const ArenaPlanner& planner) {
  const size_t alignment = planner.options().tensor_alignment;
  for (ArenaId arena : {ArenaId::kMain, ArenaId::kPersistent}) {
    absl::Status valid =
        CheckPlacement(ArenaPlanToBufferSet(planner, arena), alignment);
    EXPECT_TRUE(valid.ok()) << valid;
  }
  for (size_t t = 0; t < planner.graph().tensors.size(); ++t) {
    std::optional<TensorPlacement> placement = planner.Placement(t);
    if (!placement) continue;
    EXPECT_EQ(Offset(planner, t), static_cast<int64_t>(placement->offset))
        << "tensor " << t;
  }
}

}  // namespace tensormem::testing_arena

#endif  // TENSORMEM_TESTS_PLAN_ARENA_TEST_UTIL_H_
