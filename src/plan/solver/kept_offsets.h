// The optimal planner with kept offsets (OptimalPlanOptions::
// keep_given_offsets): buffers whose offset is given stay there, and the
// rest is placed around them. Here are its start and its bound; the
// improvements that follow (windowed orders, repairs, local moves) take the
// kept buffers as `fixed`.
//
//   std::vector<uint8_t> fixed;
//   const uint64_t kept_top = KeptOffsetsBound(set, fixed);
//   absl::StatusOr<std::vector<uint64_t>> start =
//       StartAroundKeptOffsets(set, records, options);
#ifndef TENSORMEM_PLAN_SOLVER_KEPT_OFFSETS_H_
#define TENSORMEM_PLAN_SOLVER_KEPT_OFFSETS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/solver/optimal_planner.h"
#include "tensormem/plan/usage_record.h"

namespace tensormem::solver_internal {

// Buffers with given offsets pinned there, the rest placed around them by
// best fit, or, when the kept buffers live throughout and leave holes, the
// holes filled first (hole_fill.h) and the rest planned above them, if that
// ends lower. Refused when the given offsets overlap. `records` are the
// set's.
absl::StatusOr<std::vector<uint64_t>> StartAroundKeptOffsets(
    const BufferSet& set, const std::vector<UsageRecord<>>& records,
    const OptimalPlanOptions& options);

// No placement ends below the highest kept buffer; `fixed` gets one entry
// per buffer, 1 for a kept one.
uint64_t KeptOffsetsBound(const BufferSet& set, std::vector<uint8_t>& fixed);

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_KEPT_OFFSETS_H_
