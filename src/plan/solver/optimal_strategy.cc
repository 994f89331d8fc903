#include "tensormem/plan/solver/optimal_strategy.h"

#include <unistd.h>

#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "tensormem/plan/solver/optimal_planner.h"

namespace tensormem {

StrategyInfo OptimalStrategy() {
  StrategyInfo info;
  info.name = "optimal";
  info.description =
      "anytime search from the best greedy plan towards the peak of live "
      "bytes; "
      "proves optimality when it can (--time-limit, --capacity, --threads, "
      "--counted-time)";
  // A search of seconds: not part of `--strategy all`.
  info.in_all = false;
  info.offsets = [](const PlanInput& input,
                    const PlanOptions& options) -> absl::StatusOr<OffsetsPlan> {
    OptimalPlanOptions solver_options;
    solver_options.time_limit_seconds =
        options.time_limit_seconds.value_or(kDefaultOptimalTimeLimitSeconds);
    solver_options.capacity = options.capacity;
    solver_options.threads = options.threads;
    solver_options.counted_time = options.counted_time;
    solver_options.alignment = options.alignment;
    solver_options.progress = isatty(STDERR_FILENO) != 0;
    absl::StatusOr<OptimalPlanResult> result =
        PlanOptimal(input.set, solver_options);
    if (!result.ok()) return result.status();
    OffsetsPlan plan;
    plan.offsets.total_size = result->total_size;
    plan.offsets.offsets.reserve(result->placed.buffers.size());
    for (const Buffer& b : result->placed.buffers)
      plan.offsets.offsets.push_back(*b.offset);
    plan.extra = {{"proven_optimal", result->proven_optimal},
                  {"nodes", result->nodes},
                  {"seconds_to_best", result->seconds_to_best},
                  {"start_size", result->start_size},
                  {"proven_lower_bound", result->lower_bound},
                  {"method", result->method}};
    return plan;
  };
  return info;
}

absl::StatusOr<double> ParseTimeLimitSeconds(std::string_view text) {
  std::string number(text);
  double scale = 1;
  for (const auto& [suffix, unit_seconds] :
       {std::pair<std::string_view, double>{"ms", 1e-3},
        {"s", 1},
        {"m", 60},
        {"h", 3600}}) {
    if (number.size() > suffix.size() && number.ends_with(suffix)) {
      number.resize(number.size() - suffix.size());
      scale = unit_seconds;
      break;
    }
  }
  double value;
  if (!absl::SimpleAtod(number, &value) || !std::isfinite(value) || value < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "time limit '%s' is not a duration (e.g. 10s, 500ms, 2m)",
        std::string(text)));
  }
  return value * scale;
}

}  // namespace tensormem
