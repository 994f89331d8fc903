// RunFeasibility: one feasibility question ("does the problem fit in C?")
// answered by restarts over several orders, spread over threads; and
// RestartSchedule, which decides the orders and their node budgets.
//
// Runs are taken from one queue by every thread, so no thread idles while
// another still searches; the first run to find a placement or to exhaust
// its tree (a proof that none exists, valid whatever the order) stops the
// others.
//
//   RestartSchedule schedule(problem.buffers.size());
//   FeasibilityRequest request{.capacity = 1 << 20,
//                              .runs = schedule.Runs(50000), .threads = 2};
//   FeasibilityAnswer answer = RunFeasibility(problem, request);
//   schedule.Record(request.runs, answer);
#ifndef TENSORMEM_PLAN_SOLVER_PARALLEL_SEARCH_H_
#define TENSORMEM_PLAN_SOLVER_PARALLEL_SEARCH_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "plan/solver/feasibility_search.h"
#include "plan/solver/problem.h"
#include "plan/solver/static_orders.h"

namespace tensormem::solver_internal {

struct OrderRun {
  int order = 0;  // StaticOrderRanks index
  uint64_t node_limit = UINT64_MAX;
};

struct FeasibilityRequest {
  uint64_t capacity = 0;
  std::vector<OrderRun> runs;  // taken in this order
  int threads = 1;
  std::chrono::steady_clock::time_point deadline =
      std::chrono::steady_clock::time_point::max();
};

struct FeasibilityAnswer {
  SearchOutcome outcome = SearchOutcome::kStopped;
  std::vector<uint64_t> offsets;  // per problem buffer, when kFound
  uint64_t nodes = 0;             // over all runs and threads
  std::vector<int> deepest;       // per run: most buffers placed (-1: not run)
};

FeasibilityAnswer RunFeasibility(const Problem& problem,
                                 const FeasibilityRequest& request);

// The runs of successive feasibility questions. Each gets every base order
// at the caller's node limit, the one that placed the most buffers in its
// last run at twice that (it is the likeliest to finish), interleaved with
// short restarts on perturbed orders of Luby lengths (1, 1, 2, 1, 1, 2, 4,
// ... units) that take as many nodes again: on tight sets a wrong choice low
// in the tree is often only found deep in it, and many short runs from
// different orders escape that where a few long ones do not.
class RestartSchedule {
 public:
  explicit RestartSchedule(size_t buffers);
  std::vector<OrderRun> Runs(uint64_t node_limit);
  // Learns from the base orders' runs which one progresses best.
  void Record(const std::vector<OrderRun>& runs,
              const FeasibilityAnswer& answer);

 private:
  uint64_t unit_;
  uint64_t restarts_ = 0;  // perturbed runs handed out so far
  std::vector<int> progress_ = std::vector<int>(kBaseOrderCount, 0);
};

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_PARALLEL_SEARCH_H_
