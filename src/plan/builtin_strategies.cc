#include "plan/builtin_strategies.h"

#include "tensormem/plan/object_strategies.h"
#include "tensormem/plan/offset_strategies.h"
#include "tensormem/plan/solver/optimal_strategy.h"

namespace tensormem {
namespace {

// Cost constants measured with bench/plan_benchmark.cc (see docs/planners.md):
// CPU seconds per unit of the dominant term of each algorithm.
// greedy_by_breadth: per (tensor, object) probe, and per segment-profile entry.
constexpr double kSecondsPerBreadthStep = 4e-9;
constexpr double kSecondsPerProfileEntry = 1.5e-7;
// greedy_by_size objects: per (step, tensor) of its n^2 priority scans.
constexpr double kSecondsPerPriorityScan = 4.5e-9;
// TFLite offsets: per (tensor, placed tensor) scanned.
constexpr double kSecondsPerOffsetScan = 1.5e-9;
// min_cost_flow: per (shortest path, edge). The level-synchronous search
// relaxes each edge about 15 times per path on DNN-like synthetic sets, but
// several times more on lifetimes taken from training traces (resnet18's
// 1,372-buffer training set was estimated at 32 s and ran for minutes), so
// the constant is 4x the synthetic measurement: better to refuse a run that
// would have fitted than to start one that takes minutes.
constexpr double kSecondsPerFlowRelax = 1.4e-7;
// min_cost_flow memory: an edge, its twin and their adjacency slots.
constexpr double kBytesPerFlowEdge = 2 * 24 + 2 * 8;

double Square(double x) { return x * x; }

double BreadthSeconds(const ProblemSize& p) {
  return kSecondsPerBreadthStep * p.buffers * p.positional_maximums +
         kSecondsPerProfileEntry * p.profile_entries;
}
double BySizeSeconds(const ProblemSize& p) {
  if (p.mode == PlanMode::kOffsets)
    return kSecondsPerOffsetScan * Square(p.buffers) / 2;
  return kSecondsPerPriorityScan * Square(p.buffers) +
         kSecondsPerProfileEntry * p.profile_entries;
}
double PriorityBytes(const ProblemSize& p) {
  // One distance per (tensor, object); objects are at least the positional
  // maximums.
  return 8.0 * p.buffers * p.positional_maximums + 8.0 * p.profile_entries;
}
double ProfileBytes(const ProblemSize& p) { return 8.0 * p.profile_entries; }

StrategyInfo ObjectsStrategy(std::string name, std::string description,
                             std::function<absl::StatusOr<ObjectsAssignment<>>(
                                 const std::vector<UsageRecord<>>&)>
                                 objects) {
  StrategyInfo info;
  info.name = std::move(name);
  info.description = std::move(description);
  info.objects = std::move(objects);
  return info;
}

}  // namespace

std::vector<StrategyInfo> BuiltinStrategies() {
  using Records = std::vector<UsageRecord<>>;
  std::vector<StrategyInfo> registry;
  registry.push_back(
      ObjectsStrategy("naive", "TFLite NAIVE: one object per tensor",
                      [](const Records& r) { return NaiveAssignment(r); }));
  StrategyInfo equality = ObjectsStrategy(
      "equality", "TFLite EQUALITY: reuse only objects of the exact same size",
      [](const Records& r) { return EqualityAssignmentWithHash(r); });
  equality.wants_sorted_input = true;
  registry.push_back(std::move(equality));

  StrategyInfo in_order = ObjectsStrategy(
      "greedy_in_order",
      "TFLite GREEDY_IN_ORDER: closest released object, by first task",
      [](const Records& r) { return GreedyInOrderAssignment(r); });
  in_order.wants_sorted_input = true;
  registry.push_back(std::move(in_order));

  StrategyInfo breadth = ObjectsStrategy(
      "greedy_by_breadth", "TFLite GREEDY_BY_BREADTH: widest tasks first",
      [](const Records& r) { return GreedyByBreadthAssignment(r); });
  breadth.estimate_seconds = BreadthSeconds;
  breadth.estimate_bytes = ProfileBytes;
  registry.push_back(std::move(breadth));

  StrategyInfo by_size = ObjectsStrategy(
      "greedy_by_size",
      "TFLite GREEDY_BY_SIZE: objects by size-distance priority; offsets: "
      "largest first into "
      "the tightest gap (honours --align)",
      [](const Records& r) { return GreedyBySizeDistPriorityAssignment(r); });
  by_size.offsets =
      [](const PlanInput& input,
         const PlanOptions& options) -> absl::StatusOr<OffsetsPlan> {
    absl::StatusOr<OffsetsAssignment> offsets =
        GreedyBySizeOffsets(input.records, options.alignment);
    if (!offsets.ok()) return offsets.status();
    return OffsetsPlan{*std::move(offsets), {}};
  };
  by_size.estimate_seconds = BySizeSeconds;
  by_size.estimate_bytes = [](const ProblemSize& p) {
    return p.mode == PlanMode::kOffsets ? 0.0 : PriorityBytes(p);
  };
  registry.push_back(std::move(by_size));

  StrategyInfo best = ObjectsStrategy(
      "greedy_best",
      "TFLite GREEDY_BEST: the smaller of greedy_by_size and greedy_by_breadth",
      [](const Records& r) { return BestGreedy(r); });
  best.estimate_seconds = [](const ProblemSize& p) {
    ProblemSize objects = p;
    objects.mode =
        PlanMode::kObjects;  // both halves plan objects in either mode
    return BySizeSeconds(objects) + BreadthSeconds(objects);
  };
  best.estimate_bytes = PriorityBytes;
  registry.push_back(std::move(best));

  StrategyInfo flow = ObjectsStrategy(
      "min_cost_flow",
      "TFLite MINCOSTFLOW: min-cost bipartite matching (64-bit costs)",
      [](const Records& r) { return MinCostFlowAssignment(r); });
  flow.wants_sorted_input = true;
  flow.estimate_seconds = [](const ProblemSize& p) {
    return kSecondsPerFlowRelax * p.buffers * (p.reuse_pairs + 3.0 * p.buffers);
  };
  flow.estimate_bytes = [](const ProblemSize& p) {
    return kBytesPerFlowEdge * (p.reuse_pairs + 3.0 * p.buffers);
  };
  registry.push_back(std::move(flow));

  StrategyInfo best_fit;
  best_fit.name = "best_fit_multi";
  best_fit.description =
      "best fit and first fit under several orders (size, lifetime, area); "
      "keeps the smallest";
  best_fit.offsets =
      [](const PlanInput& input,
         const PlanOptions& options) -> absl::StatusOr<OffsetsPlan> {
    absl::StatusOr<BestFitResult> best =
        BestFitMulti(input.records, options.alignment);
    if (!best.ok()) return best.status();
    return OffsetsPlan{std::move(best->offsets), {{"variant", best->variant}}};
  };
  registry.push_back(std::move(best_fit));
  registry.push_back(OptimalStrategy());
  return registry;
}

}  // namespace tensormem
