// PackAtPeak: a start for large sets whose plan misses the bound only by
// gaps at the time live bytes peak.
//
// A plan at the bound holds the buffers live at a peak with no gap between
// them. Greedy plans of large sets often come close but for a gap or two
// there: on MindSpore's PanGu-alpha 2.6B (18,692 buffers, one sharp peak),
// best fit ends one 40 MiB gap above the bound, and the windowed orders,
// their repairs and local moves, started from it, find nothing lower in 10 s
// (moving the stack above the gap down meets 2,894 other buffers). This start
// closes the gaps: at every time live bytes reach the peak, the buffers live
// then keep the order the plan gives them but are packed from offset 0 up
// (those packed at an earlier peak stay, the others go as low as they can
// above the one before them), and every other buffer is placed around them
// (OptimalPlanOptions::keep_given_offsets). On PanGu-alpha that reaches the
// bound in 0.3 s, and on two copies of it one after the other in 1.1 s. The
// order matters: the same buffers packed by lifetime instead end 1.5-13%
// above the bound.
//
//   if (std::optional<std::vector<uint64_t>> packed =
//           PackAtPeak(set, records, offsets, options, seconds)) {
//     ...  // a valid placement of `set`, one offset per buffer
//   }
#ifndef TENSORMEM_PLAN_SOLVER_PEAK_PACK_H_
#define TENSORMEM_PLAN_SOLVER_PEAK_PACK_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/solver/optimal_planner.h"
#include "tensormem/plan/usage_record.h"

namespace tensormem::solver_internal {

// `offsets` is a valid placement of `set` (one per buffer; `records` are the
// set's) whose order at the peaks is kept. Nullopt, at the cost of one best
// fit, when the best fit around the packed buffers does not end below
// `offsets` (on the other large real sets it ends 0.2-4.5% above their
// plans); nullopt too when no buffer has bytes, or when more than 20,000
// buffers are live at the peaks together. `options` gives the
// alignment, threads and cancel flag; the steps after that best fit get
// `seconds`.
std::optional<std::vector<uint64_t>> PackAtPeak(
    const BufferSet& set, const std::vector<UsageRecord<>>& records,
    const std::vector<uint64_t>& offsets, const OptimalPlanOptions& options,
    double seconds);

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_PEAK_PACK_H_
