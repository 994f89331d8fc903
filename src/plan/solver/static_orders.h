// Buffer orders for the optimal planner's search restarts.
//
// The search tries candidates in a rank order; which order reaches a packing
// first varies per instance, so restarts (and threads) cycle through several:
// most contended sections first (then longest, or largest area, or most
// overlapping), longest first, largest first, then seeded perturbations of
// each. When the search splits into independent parts, it re-ranks each part
// with the same keys but with contention counted over the bytes still
// unplaced (SortIntoOrder). The problem's overlap lists must be built.
//
//   std::vector<int> rank = StaticOrderRanks(problem, /*index=*/0);
//   SortIntoOrder(problem, /*index=*/0, unplaced_contention, part);
#ifndef TENSORMEM_PLAN_SOLVER_STATIC_ORDERS_H_
#define TENSORMEM_PLAN_SOLVER_STATIC_ORDERS_H_

#include <cstdint>
#include <vector>

#include "plan/solver/problem.h"

namespace tensormem::solver_internal {

// Number of deterministic orders before the perturbed ones begin.
inline constexpr int kBaseOrderCount = 5;

// Per buffer: the most bytes live in any of its sections (key T).
std::vector<uint64_t> SectionContention(const Problem& problem);

// Sorts `buffers` (any subset) into order `index`, first to try first.
// `contention[i]` is buffer i's key T. Indexes >= kBaseOrderCount sort by
// their base order and then swap near neighbours, seeded by `index` and
// `seed`, so each restart explores a different part of the tree.
void SortIntoOrder(const Problem& problem, int index,
                   const std::vector<uint64_t>& contention, uint64_t seed,
                   std::vector<int>& buffers);

// rank[i] = position of buffer i in order `index` over the whole problem
// (any index >= 0 is valid).
std::vector<int> StaticOrderRanks(const Problem& problem, int index);

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_STATIC_ORDERS_H_
