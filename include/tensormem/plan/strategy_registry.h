// The strategy registry: every static planner by name, run the same way.
//
// A strategy plans shared objects, offsets, or both. Objects plans also give
// offsets by laying the objects back to back (aligned), so every strategy can
// answer in offsets mode. RunStrategy converts the buffer set, refuses inputs
// on which the strategy would take minutes (unless `allow_slow`), times the
// run, proves the plan valid with the checker and computes the lower bound.
//
//   const std::string path = "data/models/resnet18.buffers.csv";
//   TM_ASSIGN_OR_RETURN(BufferSet set, ReadBufferSetCsv(path));
//   PlanOptions options;
//   options.alignment = 64;
//   TM_ASSIGN_OR_RETURN(
//       PlanResult plan,
//       RunStrategy("best_fit_multi", set, PlanMode::kOffsets, options));
//   double quality = plan.Ratio();  // total_size / lower_bound
//
// Adding a strategy: write `StrategyInfo MyStrategy();` in your own header and
// add one line `registry.push_back(MyStrategy());` to BuiltinStrategies() in
// src/plan/strategy_registry.cc (or call RegisterStrategy at startup).
#ifndef TENSORMEM_PLAN_STRATEGY_REGISTRY_H_
#define TENSORMEM_PLAN_STRATEGY_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/usage_record.h"

namespace tensormem {

enum class PlanMode {
  kOffsets,  // one arena, a byte offset per buffer; bound: peak live bytes
  kObjects,  // shared objects; bound: sum of positional maximums
};
std::string_view PlanModeName(PlanMode mode);  // "offsets" / "objects"

struct PlanOptions {
  uint64_t alignment = 1;  // offsets are multiples of it (> 0)
  bool allow_slow =
      false;  // run even when the estimate exceeds kSlowStrategySeconds
  // For search strategies (e.g. `optimal`); the heuristics ignore them.
  std::optional<double> time_limit_seconds{};
  std::optional<uint64_t> capacity{};
  int threads = 1;
  // The time limit counts work, not wall-clock time: on one thread, the same
  // plan on every run (OptimalPlanOptions::counted_time).
  bool counted_time = false;
};

// Strategies estimated to take longer than this, or to need more memory than
// kLargeStrategyBytes, are refused without allow_slow.
inline constexpr double kSlowStrategySeconds = 60;
inline constexpr double kLargeStrategyBytes = 4.0 * (uint64_t{1} << 30);

// Both views of the input: the buffer set and its usage records (record i is
// buffer i, closed intervals).
struct PlanInput {
  const BufferSet& set;
  const std::vector<UsageRecord<>>& records;
};

// What an offsets strategy returns; `extra` fields are reported verbatim in
// JSON (e.g. proven_optimal, nodes, seconds_to_best).
struct OffsetsPlan {
  OffsetsAssignment offsets;
  std::map<std::string, nlohmann::json> extra;
};

// The input measures a time estimate may use.
struct ProblemSize {
  PlanMode mode = PlanMode::kOffsets;
  size_t buffers = 0;
  uint64_t profile_entries = 0;    // (task run, live tensor) pairs
  size_t positional_maximums = 0;  // roughly the number of objects a plan needs
  uint64_t reuse_pairs =
      0;  // (tensor, earlier released tensor) pairs, in input order
};
ProblemSize MeasureProblem(const std::vector<UsageRecord<>>& records,
                           PlanMode mode);

struct StrategyInfo {
  std::string name;  // snake_case, unique
  std::string description;
  // At least one is set.
  std::function<absl::StatusOr<ObjectsAssignment<>>(
      const std::vector<UsageRecord<>>&)>
      objects;
  std::function<absl::StatusOr<OffsetsPlan>(const PlanInput&,
                                            const PlanOptions&)>
      offsets;
  // Estimated seconds on one core of a 2020s machine; unset means fast.
  std::function<double(const ProblemSize&)> estimate_seconds;
  // Estimated peak memory in bytes; unset means small.
  std::function<double(const ProblemSize&)> estimate_bytes;
  bool in_all = true;  // whether `plan --strategy all` runs it
  // The objects function assumes records ordered by first task (as TFLite's
  // delegates build them); RunStrategy then sorts them, stably, and maps the
  // result back. Buffer sets from other tools come in any row order.
  bool wants_sorted_input = false;
};

// Adds a strategy (the built-ins are one table, builtin_strategies.cc); false
// when its name is taken. Pointers already handed out stay valid.
bool RegisterStrategy(StrategyInfo info);
// nullptr when unknown.
const StrategyInfo* FindStrategy(std::string_view name);
// Strategies that can answer in `mode`, in registration order.
std::vector<const StrategyInfo*> ListStrategies(PlanMode mode);

struct PlanResult {
  std::string strategy;
  PlanMode mode = PlanMode::kOffsets;
  std::vector<uint64_t>
      offsets;  // per buffer, both modes (objects: laid back to back)
  ObjectsAssignment<> objects;  // kObjects only
  uint64_t total_size = 0;
  uint64_t lower_bound = 0;
  double seconds = 0;
  std::map<std::string, nlohmann::json> extra;

  double Ratio() const {
    return lower_bound == 0 ? 1.0
                            : static_cast<double>(total_size) / lower_bound;
  }
};

// The lower bound of `mode` for these records.
uint64_t LowerBound(const std::vector<UsageRecord<>>& records, PlanMode mode);

// Runs strategy `name` on `set`. Fails on unknown names, strategies that do
// not support `mode`, invalid input (sizes whose sum overflows, negative
// times), estimates above kSlowStrategySeconds or kLargeStrategyBytes without
// allow_slow (FailedPrecondition, naming the estimate), and
// (InternalError) a plan the checker rejects.
absl::StatusOr<PlanResult> RunStrategy(std::string_view name,
                                       const BufferSet& set, PlanMode mode,
                                       const PlanOptions& options = {});

// Why `strategy` would be refused on a problem of `size` ("estimated 340 s
// ..."), or empty when it may run.
std::string SlownessReason(const StrategyInfo& strategy,
                           const ProblemSize& size);
// Estimated seconds (0 when the strategy gives no estimate).
double EstimateSeconds(const StrategyInfo& strategy, const ProblemSize& size);

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_STRATEGY_REGISTRY_H_
