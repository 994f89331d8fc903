// Placing a learnt iteration in the memory the fallback already holds,
// around the blocks that live there when the plan takes over.
//
// A plan placed in an arena of its own needs one free stretch as large as
// the iteration's peak. Blocks made in the first steps (parameters,
// optimizer state, the last step's gradients) sit scattered through the
// pool, so that stretch is rarely there, and taking it on top of them
// raises the pool. Placed around them instead, the iteration fills the holes
// between them: the pool then holds about the peak of all live bytes.
//
//   std::vector<LiveBlock> live = ...;  // the pool's blocks, from its base
//   absl::StatusOr<PlacementAround> placed = PlaceAround(plan, live);
//   // placed->plan's offsets are from the pool's base; its arena_bytes is
//   // the top of the placement and of the live blocks.
#ifndef TENSORMEM_SRC_ALLOC_LOOP_PLACEMENT_H_
#define TENSORMEM_SRC_ALLOC_LOOP_PLACEMENT_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/loop_plan.h"

namespace tensormem::alloc_internal {

// A block in memory where the iteration is to be placed.
struct LiveBlock {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  // The request of the plan whose previous instance this block is, or -1
  // (made before the loop, or address space that is not memory): it stays
  // in place for the whole iteration unless the plan knows its free.
  int64_t previous_request = -1;

  friend bool operator==(const LiveBlock&, const LiveBlock&) = default;
};

struct PlacementAround {
  LoopPlan plan;  // offsets from the base of the live blocks' memory
  // Request j may be served from the plan once the live blocks
  // gates[gate_begin[j]], ..., gates[gate_begin[j + 1] - 1] were freed:
  // it is placed where they were.
  std::vector<uint32_t> gate_begin;
  std::vector<uint32_t> gates;
  // By live block: planned blocks take its place once it is freed, so its
  // memory must stay with the plan then.
  std::vector<uint8_t> reused;
  // Request j may be served from the plan while no arena block is live at
  // the slots guards[guard_begin[j]], ..., guards[guard_begin[j + 1] - 1]:
  // it lies where a block that wraps waits for its previous instance's free
  // (an instance of every iteration, freed early in the next one).
  std::vector<uint32_t> guard_begin;
  std::vector<uint32_t> guards;
};

struct PlaceAroundOptions {
  // The memory there is: when the peak of live bytes of the blocks to place
  // and the live ones together exceeds it, no placement fits, and none is
  // tried.
  uint64_t limit = ~uint64_t{0};
  // The optimal planner's time, counted in work (OptimalPlanOptions::
  // counted_time: the same placement on every run, whatever the machine's
  // load), and a flag that stops it (null: none).
  double seconds = 1.0;
  const std::atomic<bool>* cancel = nullptr;
};

// Places the arena blocks of `plan` around `live` (which must not overlap):
// a block that wraps keeps the place of its previous instance, which it
// replaces; the others go around every live block for as long as the block
// lives in the iteration. The optimal planner places them, keeping the live
// blocks' offsets (best fit, the windowed orders and their repairs, local
// moves); the placement is checked before it is returned.
absl::StatusOr<PlacementAround> PlaceAround(
    const LoopPlan& plan, const std::vector<LiveBlock>& live,
    const PlaceAroundOptions& options = {});

}  // namespace tensormem::alloc_internal

#endif  // TENSORMEM_SRC_ALLOC_LOOP_PLACEMENT_H_
