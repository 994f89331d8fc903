// FillHolesAtThePeak: a start for placing buffers around kept ones that
// live through the whole set (blocks already in memory: parameters, optimizer
// state), filling the holes between them where the peak needs it.
//
// Such kept buffers are walls: every other buffer lies in one hole between
// two of them or above the highest. Whatever the holes do not hold at the
// peak's times must sit above the walls, so what counts is how full each hole
// is then. Best fit visits buffers by size or lifetime over the whole set and
// leaves the holes part empty there (2.0% above the bound on a ResNet-18
// training step around its 186 kept blocks). Here each hole, smallest first
// (few buffers fit the small ones), and in rounds while any goes in,
// takes the buffers that spend most bytes in the times where the buffers
// still left for the top exceed the room the bound leaves above the walls
// (size times such times, largest first), each at its lowest free offset in
// the hole; a buffer that no longer meets such a time is left out. The rest
// is for the caller to place around these (the optimal planner plans it above
// the walls, kept_offsets.cc; best fit pinned around them also does).
//
//   PinnedOffsets kept = ...;  // the kept buffers' offsets, others empty
//   if (std::optional<PinnedOffsets> filled =
//           FillHolesAtThePeak(records, kept, alignment)) {
//     BestFitMulti(records, alignment, *filled);  // the rest
//   }
#ifndef TENSORMEM_PLAN_SOLVER_HOLE_FILL_H_
#define TENSORMEM_PLAN_SOLVER_HOLE_FILL_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "tensormem/plan/offset_strategies.h"
#include "tensormem/plan/usage_record.h"

namespace tensormem::solver_internal {

// Above this many records the filling (quadratic in a hole's buffers) is
// not tried.
inline constexpr size_t kMaxHoleFillRecords = 20000;

// `kept` has one entry per record (kept offsets must not overlap, and are
// multiples of `alignment`, which must be positive). Returns `kept` with the
// buffers put in holes added, or nullopt when there is nothing to fill: no
// kept buffer, one that does not live through every other buffer's lifetime,
// no hole, more than kMaxHoleFillRecords records, or sizes that add up to
// more than INT64_MAX.
std::optional<PinnedOffsets> FillHolesAtThePeak(
    const std::vector<UsageRecord<>>& records, const PinnedOffsets& kept,
    uint64_t alignment);

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_HOLE_FILL_H_
