// The `optimal` entry of the strategy registry: PlanOptimal behind the same
// interface as the greedy planners, so `tensormem plan --strategy optimal`
// and RunStrategy("optimal", ...) use it. Its JSON adds proven_optimal,
// nodes, seconds_to_best, start_size (the greedy plan it started from),
// proven_lower_bound and method.
//
//   registry.push_back(OptimalStrategy());  // in BuiltinStrategies()
//   PlanOptions options;
//   options.time_limit_seconds = 5;  // default 10; 0 keeps the greedy plan
//   TM_ASSIGN_OR_RETURN(
//       PlanResult plan,
//       RunStrategy("optimal", set, PlanMode::kOffsets, options));
#ifndef TENSORMEM_PLAN_SOLVER_OPTIMAL_STRATEGY_H_
#define TENSORMEM_PLAN_SOLVER_OPTIMAL_STRATEGY_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "tensormem/plan/strategy_registry.h"

namespace tensormem {

// Time limit when PlanOptions leaves it unset.
inline constexpr double kDefaultOptimalTimeLimitSeconds = 10;

StrategyInfo OptimalStrategy();

// Parses a time limit for flags: seconds with an optional unit, "10", "10s",
// "500ms", "1.5m", "0". Errors name the text.
absl::StatusOr<double> ParseTimeLimitSeconds(std::string_view text);

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_SOLVER_OPTIMAL_STRATEGY_H_
