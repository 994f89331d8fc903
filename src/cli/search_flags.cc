#include "cli/search_flags.h"

#include "absl/status/statusor.h"
#include "cli/failure.h"
#include "tensormem/core/units.h"
#include "tensormem/plan/solver/optimal_strategy.h"

namespace tensormem::cli {

void AddSearchFlags(CLI::App& command, SearchFlags& flags) {
  command.add_option("--time-limit", flags.time_limit,
                     "optimal: search budget, e.g. 10s, 500ms (default 10s; "
                     "0 keeps the greedy plan)");
  command.add_option("--capacity", flags.capacity,
                     "optimal: stop at the first plan within this many "
                     "bytes, e.g. 1048576 or 1M");
  command
      .add_option("--threads", flags.threads,
                  "optimal: parallel searches (default 1)")
      ->check(CLI::Range(1, 1024));
  command.add_flag("--counted-time", flags.counted_time,
                   "optimal: count --time-limit in work done (steps of "
                   "about a microsecond), not on the clock: with one "
                   "thread, the same plan on every run and machine");
}

void ApplySearchFlags(std::string_view command, const SearchFlags& flags,
                      PlanOptions& options) {
  if (!flags.time_limit.empty()) {
    absl::StatusOr<double> seconds = ParseTimeLimitSeconds(flags.time_limit);
    if (!seconds.ok()) Fail(command, 2, seconds.status().message());
    options.time_limit_seconds = *seconds;
  }
  if (!flags.capacity.empty()) {
    absl::StatusOr<uint64_t> capacity = ParseByteSize(flags.capacity);
    if (!capacity.ok()) Fail(command, 2, capacity.status().message());
    options.capacity = *capacity;
  }
  options.threads = flags.threads;
  options.counted_time = flags.counted_time;
}

}  // namespace tensormem::cli
