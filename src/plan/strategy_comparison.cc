#include "tensormem/plan/strategy_comparison.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace tensormem {

absl::StatusOr<StrategyComparison> CompareStrategies(
    const BufferSet& set, PlanMode mode, const PlanOptions& options,
    const ComparisonCallbacks& callbacks) {
  absl::StatusOr<std::vector<UsageRecord<>>> records = ToUsageRecords(set);
  if (!records.ok()) return records.status();
  const ProblemSize size = MeasureProblem(*records, mode);
  StrategyComparison comparison;
  comparison.mode = mode;
  comparison.buffers = set.buffers.size();
  comparison.lower_bound = LowerBound(*records, mode);
  if (callbacks.on_start) callbacks.on_start(comparison);
  for (const StrategyInfo* strategy : ListStrategies(mode)) {
    if (!strategy->in_all) continue;
    StrategyComparison::Entry entry{strategy->name, std::nullopt, ""};
    if (!options.allow_slow) entry.skipped = SlownessReason(*strategy, size);
    if (entry.skipped.empty()) {
      if (callbacks.before_each) callbacks.before_each(*strategy, size);
      absl::StatusOr<PlanResult> plan =
          RunStrategy(strategy->name, set, mode, options);
      if (!plan.ok()) {
        return absl::Status(
            plan.status().code(),
            absl::StrCat(strategy->name, ": ", plan.status().message()));
      }
      entry.plan = *std::move(plan);
      const auto& best = comparison.best;
      if (!best ||
          entry.plan->total_size < comparison.entries[*best].plan->total_size) {
        comparison.best = comparison.entries.size();
      }
    }
    if (callbacks.after_each) callbacks.after_each(entry);
    comparison.entries.push_back(std::move(entry));
  }
  return comparison;
}

}  // namespace tensormem
