// StartOffsets: the plan the optimal planner starts from.
//
// The caller's plan (OptimalPlanOptions::start_offsets) once checked; with
// kept offsets, the start around them (kept_offsets.h); otherwise the lower
// of best fit and, on sets small enough, greedy by size.
//
//   absl::StatusOr<std::vector<uint64_t>> offsets =
//       StartOffsets(set, records, options);
#ifndef TENSORMEM_PLAN_SOLVER_START_PLAN_H_
#define TENSORMEM_PLAN_SOLVER_START_PLAN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/solver/optimal_planner.h"
#include "tensormem/plan/usage_record.h"

namespace tensormem::solver_internal {

// One offset per buffer of `set` (`records` are its records). A caller's
// plan is refused (InvalidArgument) when it has the wrong number of
// offsets, is not a valid placement, or moves a kept buffer.
absl::StatusOr<std::vector<uint64_t>> StartOffsets(
    const BufferSet& set, const std::vector<UsageRecord<>>& records,
    const OptimalPlanOptions& options);

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_START_PLAN_H_
