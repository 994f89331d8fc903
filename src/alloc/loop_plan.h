// The planned policy's offline half: finding the loop in the calls an
// allocator saw, and turning one iteration of it into a placement plan with
// the project's planners (planned_allocator.h serves it).
//
// A learning allocator logs every call as a LoopEvent. FindLoop looks for the
// period with which the end of the log repeats (iterations marked by the user
// when there are marks); BuildLoopPlan cuts one iteration out at its quietest
// point, places every block that lives and dies inside it in one arena, and
// says for each allocation of the iteration where it goes.
//
//   std::optional<LoopShape> shape = FindLoop(history, {});
//   if (shape) absl::StatusOr<LoopPlan> plan = BuildLoopPlan(history, *shape);
#ifndef TENSORMEM_SRC_ALLOC_LOOP_PLAN_H_
#define TENSORMEM_SRC_ALLOC_LOOP_PLAN_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "tensormem/plan/buffer_set.h"

namespace tensormem::alloc_internal {

enum class LoopEventKind : uint8_t { kAlloc, kFree, kMark };

// What the allocator's allocation number `value` of a free is when the block
// was allocated before the log began.
inline constexpr uint64_t kUnloggedBlock = ~uint64_t{0};

// One call. Allocations are numbered 0, 1, ... in the order they were made
// (their sequence number); a free names the allocation it frees.
struct LoopEvent {
  LoopEventKind kind = LoopEventKind::kAlloc;
  int32_t stream = 0;
  uint32_t alignment = 0;
  uint64_t value = 0;  // kAlloc: requested bytes; kFree: sequence number

  // Same request: what an iteration must repeat exactly.
  bool SameRequest(const LoopEvent& other) const {
    return value == other.value && alignment == other.alignment &&
           stream == other.stream;
  }
};

// The calls since some point: events[0] is the call after
// `first_sequence` - 1 allocations were made.
struct LoopHistory {
  std::vector<LoopEvent> events;
  uint64_t first_sequence = 0;  // sequence number of the first kAlloc
};

// One iteration of a loop: it begins with allocation `first_sequence` and
// makes `period` allocations; the next begins with allocation
// first_sequence + period (or, when `marked`, at the next mark).
struct LoopShape {
  uint64_t first_sequence = 0;
  uint64_t period = 0;
  bool marked = false;
  // Identifies the loop whatever the phase: the period and the sum of the
  // requests' hashes over an iteration.
  uint64_t key = 0;
};

// The loop the end of the history repeats, or nullopt: with marks, the last
// two whole marked iterations when they make the same requests in the same
// order; without, the period p with the longest stretch of the log explained
// (the last p + q allocations repeat with period p, q > p: a full iteration
// seen twice and one allocation more), shortest on ties, when that stretch
// holds at least half the logged allocations. Loops whose key is in
// `rejected` (plans that did not hold) are skipped.
std::optional<LoopShape> FindLoop(
    const LoopHistory& history, const absl::flat_hash_set<uint64_t>& rejected);

// Where the plan puts one allocation of the iteration.
struct PlannedRequest {
  LoopEvent request;  // kAlloc: what must be asked for
  // In the arena at `offset`, or (`in_arena` false) left to the fallback: it
  // outlives the iteration. A block that `wraps` is freed in the next
  // iteration, before its next instance is made: its place is its own for
  // the whole iteration.
  bool in_arena = false;
  bool wraps = false;
  uint64_t offset = 0;
  uint64_t bytes = 0;  // reserved in the arena (the request, rounded)
  // The arena block may be handed out once the first `frees_before` frees
  // of arena blocks of this iteration (in the order planned) were made; its
  // own free is number `free_rank` of that order (blocks that wrap: once
  // their previous instance was freed; they have no rank).
  uint32_t frees_before = 0;
  uint32_t free_rank = 0;
  uint32_t slot = 0;  // arena blocks: the index of `offset` among the plan's
  // When the previous iteration's instance of this request is freed, and
  // when this one is made, in events from the iteration's start; -1 when
  // not within the iteration.
  int64_t previous_freed = -1;
  int64_t allocated = -1;
};

struct LoopPlan {
  LoopShape shape;
  // Iterations of the loop that one period of the plan covers: 2 when blocks
  // overlap their next instance (loop_unroll.h); shape.period counts both.
  uint32_t iterations = 1;
  std::vector<PlannedRequest> requests;  // shape.period of them, in order
  uint64_t arena_bytes = 0;
  uint64_t arena_alignment = 256;
  uint32_t arena_frees = 0;  // frees of arena blocks within an iteration
  std::vector<uint32_t> free_order;  // by free rank: the request freed
  uint64_t peak_arena_live = 0;      // lower bound of arena_bytes
  // The requests of an iteration that outlive it (left to the fallback),
  // each rounded up to 256 bytes: a new one may be made before the last
  // iteration's is freed (an output bound again to the same variable).
  uint64_t outliving_bytes = 0;
  // The distinct offsets of arena blocks, numbered: at most one live block
  // starts at each, so a free finds its block by one lookup.
  absl::flat_hash_map<uint64_t, uint32_t> slot_of_offset;
  // What the arena's planner placed (id: the request), lifetimes in events
  // from the iteration's start, of `iteration_events` in all: the plan can
  // be placed again around blocks already in memory (loop_placement.h).
  std::vector<Buffer> arena_buffers;
  int64_t iteration_events = 0;
};

// Whether `position` requests into `plan` end the first of the two
// iterations of an unrolled plan (where a marked loop's mark comes).
inline bool HalfWayThroughUnrolled(const LoopPlan& plan, uint64_t position) {
  return plan.iterations == 2 && 2 * position == plan.requests.size();
}

// Gives the arena blocks of `plan` the offsets `offset_of_request` (by
// request; outliving ones ignored), numbering their distinct offsets.
void AssignOffsets(const std::vector<uint64_t>& offset_of_request,
                   LoopPlan& plan);

// The plan for the iteration of `shape` in the history (which must hold it
// and the allocation that follows it). The arena is placed by best fit under
// several orders (plan/'s best_fit_multi), then, given `search_seconds`, by
// the optimal planner within that time when it finds a smaller one; errors
// are best fit's. Blocks that overlap their next instance unroll the plan
// over two iterations (loop_unroll.h); to see them, the plan begins an
// iteration earlier when the history holds it.
absl::StatusOr<LoopPlan> BuildLoopPlan(const LoopHistory& history,
                                       const LoopShape& shape,
                                       double search_seconds = 0);

}  // namespace tensormem::alloc_internal

#endif  // TENSORMEM_SRC_ALLOC_LOOP_PLAN_H_
