// Hard feasibility instances made from real buffer sets: a third source for
// the planner's benchmark, besides the generated families (hard_instances.h)
// and MiniMalloc's published sets. Real sets are easy at their own sizes (the
// planners reach the peak of live bytes), so each instance perturbs one and
// takes away the slack:
//   1. sizes jittered by a seeded factor in [0.75, 1.25] (multiples of 64);
//   2. packed by best fit, at height H;
//   3. squeezed: in a seeded order, every buffer grows upward until it touches
//      the nearest buffer above it while both live (or H), then stretches its
//      lifetime earlier and later while no buffer shares its addresses.
// The packing stays valid throughout, so the set is known to fit H, and the
// growth pushes the peak of live bytes toward H.
//
//   HardInstance hard = SqueezeRealSet(set, /*seed=*/3);
//   PlanOptimal(hard.set, {.capacity = hard.capacity, ...});
#ifndef TENSORMEM_PLAN_SOLVER_SQUEEZED_INSTANCES_H_
#define TENSORMEM_PLAN_SOLVER_SQUEEZED_INSTANCES_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "plan/solver/hard_instances.h"
#include "tensormem/plan/buffer_set.h"

namespace tensormem::solver_internal {

// Deterministic in `set` and `seed`. Errors: a set ToUsageRecords refuses.
// Zero-size buffers are dropped; quadratic in the number of buffers.
absl::StatusOr<HardInstance> SqueezeRealSet(const BufferSet& set,
                                            uint64_t seed);

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_SQUEEZED_INSTANCES_H_
