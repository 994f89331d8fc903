// SplitAtFirstPeak: a start for sets whose peak of live bytes comes back in
// a later part of the timeline, as in a training run recorded over several
// iterations.
//
// Each part alone is easy: on a transformer's training recorded on a GPU
// (3,853 buffers, three iterations, two peaks of the same bytes), the search
// places the buffers up to the first peak at their bound in 1.2 s, and those
// from there to the second in 0.7 s. Over the whole set it finds nothing
// below the greedy plan's 1.0112x in 10 s: a dead end met at the later peak
// sends it back into the choices made around the first. So the buffers that
// begin up to the end of the first peak are planned as a set of their own,
// their lifetimes cut there, and the rest is placed around them with those
// offsets kept (OptimalPlanOptions::keep_given_offsets): 1.0022x on that
// set, from which the search over the whole set then reaches the bound.
// The buffers live at both peaks are stacked at the bottom first, and the
// first part is planned above them: wherever the first part put them, they
// would be walls for the rest (1.0087x -> 1.0033x on a longer recording).
//
//   if (std::optional<std::vector<uint64_t>> split =
//           SplitAtFirstPeak(set, options, seconds)) {
//     ...  // a valid placement of `set`, one offset per buffer
//   }
#ifndef TENSORMEM_PLAN_SOLVER_PEAK_SPLIT_H_
#define TENSORMEM_PLAN_SOLVER_PEAK_SPLIT_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/solver/optimal_planner.h"

namespace tensormem::solver_internal {

// The times at which live bytes reach their peak from below, in order (a
// buffer is live over [lower, upper)); empty when no buffer has bytes.
std::vector<int64_t> PeakTimes(const BufferSet& set);

// Nullopt when the peak does not come back (live bytes fall to 3/4 of the
// peak after the first and reach 99% of it again), when either part would
// hold fewer than an eighth of the buffers, or when a part fails. Half of
// `seconds` goes to each part; `options` gives the alignment, threads and
// cancel flag.
std::optional<std::vector<uint64_t>> SplitAtFirstPeak(
    const BufferSet& set, const OptimalPlanOptions& options, double seconds);

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_PEAK_SPLIT_H_
