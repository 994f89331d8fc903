// Comparing the static planners on one buffer set: every registered strategy
// that `all` includes and that supports the mode runs; those estimated to take
// minutes are skipped (with the reason) unless `allow_slow`.
//
//   TM_ASSIGN_OR_RETURN(StrategyComparison table,
//                       CompareStrategies(set, PlanMode::kOffsets, {}));
//   const PlanResult& best = *table.entries[*table.best].plan;
#ifndef TENSORMEM_PLAN_STRATEGY_COMPARISON_H_
#define TENSORMEM_PLAN_STRATEGY_COMPARISON_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/strategy_registry.h"

namespace tensormem {

struct StrategyComparison {
  struct Entry {
    std::string strategy;
    std::optional<PlanResult> plan;  // unset when skipped
    std::string skipped;             // why it did not run (SlownessReason)
  };
  PlanMode mode = PlanMode::kOffsets;
  size_t buffers = 0;
  uint64_t lower_bound = 0;
  std::vector<Entry> entries;  // registration order
  std::optional<size_t> best;  // the entry with the smallest total size
};

// Called around each strategy, e.g. to announce slow ones and print rows as
// they come.
struct ComparisonCallbacks {
  // Once, before any strategy runs: mode, buffers and lower bound are set.
  std::function<void(const StrategyComparison&)> on_start;
  std::function<void(const StrategyInfo&, const ProblemSize&)> before_each;
  std::function<void(const StrategyComparison::Entry&)> after_each;
};

// Runs the strategies of ListStrategies(mode) with `in_all`. Errors: invalid
// input (ToUsageRecords), or a strategy's failure (RunStrategy's), naming it.
absl::StatusOr<StrategyComparison> CompareStrategies(
    const BufferSet& set, PlanMode mode, const PlanOptions& options,
    const ComparisonCallbacks& callbacks = {});

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_STRATEGY_COMPARISON_H_
