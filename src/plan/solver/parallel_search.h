// RunFeasibility: one feasibility question ("does the problem fit in C?")
// answered by restarts over several static orders, spread over threads.
//
// Each order gets its own FeasibilitySearch with the same node limit; the
// first order to find a placement or to exhaust its tree (a proof that none
// exists, valid whatever the order) stops the others.
//
//   FeasibilityRequest request{.capacity = 1 << 20, .node_limit = 50000,
//                              .orders = {0, 1, 2, 3}, .threads = 2};
//   FeasibilityAnswer answer = RunFeasibility(problem, request);
#ifndef TENSORMEM_PLAN_SOLVER_PARALLEL_SEARCH_H_
#define TENSORMEM_PLAN_SOLVER_PARALLEL_SEARCH_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "plan/solver/feasibility_search.h"
#include "plan/solver/problem.h"

namespace tensormem::solver_internal {

struct FeasibilityRequest {
  uint64_t capacity = 0;
  uint64_t node_limit = UINT64_MAX;  // per order
  std::vector<int> orders;           // static order indexes to try
  int threads = 1;
  std::chrono::steady_clock::time_point deadline =
      std::chrono::steady_clock::time_point::max();
};

struct FeasibilityAnswer {
  SearchOutcome outcome = SearchOutcome::kStopped;
  std::vector<uint64_t> offsets;  // per problem buffer, when kFound
  uint64_t nodes = 0;             // over all orders and threads
};

FeasibilityAnswer RunFeasibility(const Problem& problem,
                                 const FeasibilityRequest& request);

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_PARALLEL_SEARCH_H_
