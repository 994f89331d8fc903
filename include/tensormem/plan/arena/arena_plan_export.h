// Bridges between the arena planner and the offline planners' BufferSet.
//
// ArenaPlanToBufferSet turns a planner's result into placed buffers (one per
// tensor with its own block, lifetimes as closed node intervals), so the plan
// can be checked (CheckPlacement), drawn (RenderPlanHtml) or compared with
// the offset planners. ArenaGraphFromBufferSet goes the other way: a graph
// whose tensors have exactly the buffers' lifetimes, so the arena planners
// can run on any buffer set.
//
//   BufferSet placed = ArenaPlanToBufferSet(*planner, ArenaId::kMain);
//   TM_RETURN_IF_ERROR(CheckPlacement(placed, /*alignment=*/64));
//   uint64_t lower_bound = PeakLiveBytes(placed);
#ifndef TENSORMEM_PLAN_ARENA_ARENA_PLAN_EXPORT_H_
#define TENSORMEM_PLAN_ARENA_ARENA_PLAN_EXPORT_H_

#include "absl/status/statusor.h"
#include "tensormem/plan/arena/arena_graph.h"
#include "tensormem/plan/arena/arena_planner.h"
#include "tensormem/plan/buffer_set.h"

namespace tensormem {

// The placed tensors of one arena: id = tensor index, live [first, last + 1)
// (to the graph's end when never freed), with their offsets. Tensors sharing
// another's buffer in place are left out (their bytes are the owner's).
BufferSet ArenaPlanToBufferSet(const ArenaPlanner& planner, ArenaId arena);

// One tensor per buffer (same order, main arena): produced by the node at the
// buffer's first time step and read by the node at its last, with times
// renumbered densely. Fails on sizes or counts beyond the graph's limits.
absl::StatusOr<ArenaGraph> ArenaGraphFromBufferSet(const BufferSet& set);

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_ARENA_ARENA_PLAN_EXPORT_H_
