// Randomized graphs (DAGs with random sizes, types, optionals, temporaries
// and in-place declarations): both planners must give valid plans whose
// lifetimes cover every use, and greedy's high-water mark is reported against
// the lower bound (peak live bytes).
#include <cstdio>
#include <random>

#include "gtest/gtest.h"
#include "plan/arena_test_util.h"

namespace tensormem {
namespace {

using testing_arena::ExpectValidPlan;

int AddTensor(ArenaGraph& graph, size_t bytes, AllocationType type) {
  graph.tensors.push_back({.bytes = bytes, .type = type});
  return static_cast<int>(graph.tensors.size()) - 1;
}

ArenaGraph RandomGraph(uint32_t seed) {
  std::mt19937 rng(seed);
  auto chance = [&](int percent) {
    return static_cast<int>(rng() % 100) < percent;
  };
  auto size = [&] { return chance(5) ? size_t{0} : size_t{1} + rng() % 5000; };
  auto type = [&] {
    const int roll = rng() % 100;
    return roll < 85   ? AllocationType::kArenaRw
           : roll < 92 ? AllocationType::kArenaRwPersistent
                       : AllocationType::kDynamic;
  };
  ArenaGraph graph;
  std::vector<int> available;
  for (int i = 0, n = 1 + rng() % 3; i < n; ++i) {
    graph.inputs.push_back(AddTensor(graph, size(), AllocationType::kArenaRw));
    available.push_back(graph.inputs.back());
  }
  if (chance(30)) graph.inputs.push_back(kOptionalTensor);
  for (int i = 0, n = rng() % 3; i < n; ++i) {
    graph.variables.push_back(
        AddTensor(graph, size(), AllocationType::kArenaRwPersistent));
    available.push_back(graph.variables.back());
  }
  const int num_nodes = 1 + rng() % 30;
  for (int i = 0; i < num_nodes; ++i) {
    ArenaNode node;
    for (int k = 0, n = 1 + rng() % 3; k < n; ++k) {
      if (chance(10)) {
        node.inputs.push_back(kOptionalTensor);
      } else if (chance(10)) {
        node.inputs.push_back(
            AddTensor(graph, size(), AllocationType::kMmapRo));
      } else {
        // Prefer recent tensors, as real graphs mostly chain.
        const int back = std::min<int>(available.size() - 1, rng() % 6);
        node.inputs.push_back(available[available.size() - 1 - back]);
      }
    }
    for (int k = 0, n = (chance(10) ? 0 : 1 + rng() % 2); k < n; ++k) {
      size_t bytes = size();
      // Same size as input 0 half the time, so in-place sharing can happen.
      if (k == 0 && node.inputs[0] != kOptionalTensor && chance(50)) {
        bytes = graph.tensors[node.inputs[0]].bytes;
      }
      node.outputs.push_back(AddTensor(graph, bytes, type()));
    }
    for (int k = 0, n = rng() % 3; k < n; ++k) {
      node.temporaries.push_back(AddTensor(graph, size(), type()));
    }
    if (chance(50)) {
      node.inplace.inputs =
          chance(50) ? std::vector<int>{0} : std::vector<int>{0, 1};
      node.inplace.data_unmodified = chance(30);
    }
    for (int t : node.outputs) available.push_back(t);
    graph.nodes.push_back(std::move(node));
  }
  for (int t : graph.nodes.back().outputs) graph.outputs.push_back(t);
  if (chance(50)) graph.outputs.push_back(available[rng() % available.size()]);
  return graph;
}

// Every node that reads, writes or uses a tensor as scratch runs inside the
// lifetime of the block holding it.
void ExpectLifetimesCoverUses(const ArenaPlanner& planner) {
  const ArenaGraph& graph = planner.graph();
  for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
    const ArenaNode& node = graph.nodes[i];
    for (const std::vector<int>* list :
         {&node.inputs, &node.outputs, &node.temporaries}) {
      for (int t : *list) {
        if (t == kOptionalTensor) continue;
        std::optional<TensorPlacement> p = planner.Placement(t);
        if (!p) continue;
        EXPECT_LE(p->first_node, i) << "tensor " << t << " used by node " << i;
        EXPECT_GE(p->last_node, i) << "tensor " << t << " used by node " << i;
      }
    }
  }
}

void ExpectEveryProducedTensorPlaced(const ArenaPlanner& planner,
                                     bool temporaries) {
  const ArenaGraph& graph = planner.graph();
  auto expect_placed = [&](int t) {
    const ArenaTensor& tensor = graph.tensors[t];
    if (t == kOptionalTensor || tensor.bytes == 0 ||
        (tensor.type != AllocationType::kArenaRw &&
         tensor.type != AllocationType::kArenaRwPersistent)) {
      return;
    }
    EXPECT_NE(tensor.data, nullptr) << "tensor " << t;
    std::optional<TensorPlacement> p = planner.Placement(t);
    if (p && p->shares_with != -1) {
      EXPECT_EQ(tensor.data, graph.tensors[p->shares_with].data);
    }
  };
  for (int t : graph.inputs) expect_placed(t);
  for (int t : graph.variables) expect_placed(t);
  for (const ArenaNode& node : graph.nodes) {
    for (int t : node.outputs) expect_placed(t);
    if (temporaries) {
      for (int t : node.temporaries) expect_placed(t);
    }
  }
}

TEST(ArenaRandomTest, BothPlannersGiveValidPlans) {
  double ratio_sum = 0;
  double worst_ratio = 0;
  int measured = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    for (int config = 0; config < 5; ++config) {
      ArenaGraph graph = RandomGraph(seed);
      ArenaPlannerOptions options = testing_arena::TestOptions(
          config < 2 ? ArenaPlannerKind::kGreedy : ArenaPlannerKind::kQueue);
      options.tensor_alignment = 16;
      options.preserve_all_tensors = config == 1;
      options.preserve_inputs = config == 3;
      options.preserve_intermediates = config == 4;
      auto planner = testing_arena::PlanAll(&graph, options);
      ASSERT_NE(planner, nullptr);
      ExpectValidPlan(*planner);
      ExpectLifetimesCoverUses(*planner);
      // The queue planner may skip temporaries (a TFLite quirk, tested alone).
      ExpectEveryProducedTensorPlaced(*planner, /*temporaries=*/config < 2);
      const uint64_t lower_bound =
          PeakLiveBytes(ArenaPlanToBufferSet(*planner, ArenaId::kMain));
      EXPECT_GE(planner->high_water_mark(), lower_bound);
      if (config == 0 && lower_bound > 0) {
        const double ratio =
            static_cast<double>(planner->high_water_mark()) / lower_bound;
        ratio_sum += ratio;
        worst_ratio = std::max(worst_ratio, ratio);
        ++measured;
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
  std::printf(
      "greedy high-water mark / peak live bytes over %d graphs: "
      "mean %.3f, worst %.3f\n",
      measured, ratio_sum / measured, worst_ratio);
  ::testing::Test::RecordProperty("greedy_mean_ratio",
                                  std::to_string(ratio_sum / measured));
}

TEST(ArenaRandomTest, StepwiseGreedyKeepsOffsetsAndQueueMatchesOneShot) {
  int compared = 0;
  for (uint32_t seed = 1; seed <= 100; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    for (ArenaPlannerKind kind :
         {ArenaPlannerKind::kGreedy, ArenaPlannerKind::kQueue}) {
      ArenaGraph whole = RandomGraph(seed);
      auto reference =
          testing_arena::PlanAll(&whole, testing_arena::TestOptions(kind));
      ArenaGraph graph = RandomGraph(seed);
      auto planner =
          testing_arena::MakePlanner(&graph, testing_arena::TestOptions(kind));
      ASSERT_TRUE(planner->PlanAllocations().ok());
      std::vector<std::optional<TensorPlacement>> seen(graph.tensors.size());
      for (int node = 0; node < static_cast<int>(graph.nodes.size()); ++node) {
        ASSERT_TRUE(planner->ExecuteAllocations(node, node).ok());
        for (size_t t = 0; t < seen.size(); ++t) {
          std::optional<TensorPlacement> now = planner->Placement(t);
          if (seen[t] && now) {
            EXPECT_EQ(now->offset, seen[t]->offset) << t;
          }
          if (now) seen[t] = now;
        }
      }
      ExpectValidPlan(*planner);
      ExpectLifetimesCoverUses(*planner);
      // One-shot execution skips temporaries after a node without events (a
      // TFLite quirk) while stepwise execution does not; compare the others.
      std::vector<bool> has_events(graph.nodes.size(), false);
      for (const ArenaQueueEvent& e : reference->QueueEvents())
        has_events[e.node] = true;
      const bool quirk_free = std::find(has_events.begin(), has_events.end(),
                                        false) == has_events.end();
      if (kind == ArenaPlannerKind::kQueue && quirk_free) {
        ++compared;
        for (size_t t = 0; t < graph.tensors.size(); ++t) {
          EXPECT_EQ(testing_arena::Offset(*planner, t),
                    testing_arena::Offset(*reference, t))
              << t;
        }
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
  std::printf("queue: stepwise == one-shot checked on %d graphs\n", compared);
  EXPECT_GT(compared, 30);
}

}  // namespace
}  // namespace tensormem
