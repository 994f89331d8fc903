// Static buffer orders for the optimal planner's search restarts.
//
// The search tries candidates in a fixed rank order; which order reaches a
// packing first varies per instance, so restarts (and threads) cycle through
// several: most contended sections first (then longest, or largest area, or
// most overlapping), longest first, largest first, then seeded perturbations
// of each. The problem's overlap lists must be built.
//
//   std::vector<int> rank = StaticOrderRanks(problem, /*index=*/0);
#ifndef TENSORMEM_PLAN_SOLVER_STATIC_ORDERS_H_
#define TENSORMEM_PLAN_SOLVER_STATIC_ORDERS_H_

#include <vector>

#include "plan/solver/problem.h"

namespace tensormem::solver_internal {

// Number of deterministic orders before the perturbed ones begin.
inline constexpr int kBaseOrderCount = 5;

// rank[i] = position of buffer i in order `index` (any index >= 0 is valid;
// indexes >= kBaseOrderCount give perturbations seeded by the index).
std::vector<int> StaticOrderRanks(const Problem& problem, int index);

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_STATIC_ORDERS_H_
