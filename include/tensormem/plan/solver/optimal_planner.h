// PlanOptimal: the anytime optimal offset planner.
//
// Starting from a greedy plan, it searches for placements of ever smaller
// total size until it reaches the lower bound (peak of live bytes), proves
// that nothing smaller exists, or runs out of time; it always returns the
// best valid plan found so far. The search is a depth-first search over
// canonical placements with strong pruning (see docs/solver.md). Sets too
// large for the search alone (more than 4,096 buffers) are re-placed greedily
// under a family of time-windowed orders, whose orders are then repaired
// where their plans reach the top, and improved by local moves, within the
// same time limit and bounded memory; up to 8,192 buffers these steps take
// half the time and the search the other half, from their best plan.
//
//   OptimalPlanOptions options;
//   options.time_limit_seconds = 10;
//   options.threads = 2;
//   TM_ASSIGN_OR_RETURN(OptimalPlanResult result, PlanOptimal(set, options));
//   // result.placed has every offset; result.proven_optimal says whether
//   // result.total_size is the optimum.
//
// With `capacity`, it is a feasibility solver instead: it returns the first
// plan that fits, or an error saying why none was found.
#ifndef TENSORMEM_PLAN_SOLVER_OPTIMAL_PLANNER_H_
#define TENSORMEM_PLAN_SOLVER_OPTIMAL_PLANNER_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/plan/buffer_set.h"

namespace tensormem {

struct OptimalPlanOptions {
  // Wall-clock budget for the search (>= 0). 0 returns the starting plan.
  double time_limit_seconds = 10;
  // Count the time limit in work instead: every step of the planner reads
  // its clock after a bounded piece of work (a window of placements, a local
  // move, sixteen search nodes), and each reading counts a microsecond,
  // about what that work takes on one core. With one thread the plan is
  // then the same on every run, on any machine and under any load;
  // `seconds` and `seconds_to_best` are counted the same way.
  bool counted_time = false;
  // Find any plan whose total size is at most this, then stop.
  std::optional<uint64_t> capacity;
  // Searches run in parallel, each on its own buffer order (>= 1); on large
  // sets, windowed orders and their repairs are placed side by side.
  int threads = 1;
  // Offsets are multiples of it (> 0).
  uint64_t alignment = 1;
  // A valid placement to start from (offsets per buffer of the input, total
  // size = max end); empty: the best of tensormem's greedy planners.
  std::vector<uint64_t> start_offsets;
  // Buffers whose `offset` is set keep it (memory already in use), and the
  // rest are placed around them: best fit, then the windowed orders and
  // their repairs with the kept buffers placed first, then local moves that
  // leave them in place. The search does not run. The lower bound counts
  // the highest kept buffer's end. A start plan given with it must leave
  // the kept buffers where they are.
  bool keep_given_offsets = false;
  // Print best, bound and nodes/s on stderr about twice a second.
  bool progress = false;
  // When another thread sets it, the search stops within a few milliseconds
  // and the best plan so far is returned, as at the time limit (null: never).
  // On large sets the windowed orders and their repairs stop too, and the
  // local moves after them do not begin.
  const std::atomic<bool>* cancel = nullptr;
};

struct OptimalPlanResult {
  BufferSet placed;          // the input with every offset set
  uint64_t total_size = 0;   // max over buffers of offset + size
  uint64_t start_size = 0;   // total size of the starting (greedy) plan
  uint64_t lower_bound = 0;  // proven: no plan is smaller than this
  bool proven_optimal = false;
  uint64_t nodes = 0;          // search nodes over all threads
  double seconds = 0;          // wall-clock time spent
  double seconds_to_best = 0;  // when the returned plan was found
  // "start", "peak_split", "peak_pack", "search", "windowed_orders",
  // "repaired_order" or "local_moves": what found it.
  std::string method;
};

// Plans `set` (see the file comment). Errors: InvalidArgument for bad options
// or sizes that overflow; with `capacity`, FailedPrecondition when the
// capacity is below the lower bound or the search proved nothing fits, and
// DeadlineExceeded when no fitting plan was found in time.
absl::StatusOr<OptimalPlanResult> PlanOptimal(
    const BufferSet& set, const OptimalPlanOptions& options = {});

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_SOLVER_OPTIMAL_PLANNER_H_
