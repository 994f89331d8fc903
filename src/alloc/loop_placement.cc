#include "alloc/loop_placement.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/solver/optimal_planner.h"

namespace tensormem::alloc_internal {
namespace {

// For each live block, the iteration's events it lives through: [0, end).
// A block the plan knows to be freed in the iteration is reused after it.
int64_t LiveUntil(const LoopPlan& plan, const LiveBlock& block) {
  if (block.previous_request < 0) return plan.iteration_events;
  const int64_t freed = plan.requests[block.previous_request].previous_freed;
  return freed < 0 ? plan.iteration_events : std::max<int64_t>(freed, 1);
}

bool Overlap(uint64_t a, uint64_t a_bytes, uint64_t b, uint64_t b_bytes) {
  return a < b + b_bytes && b < a + a_bytes;
}

// What the placement must place and keep: the arena's blocks (in
// plan.arena_buffers' order), then what the live blocks hold, each with its
// offset. A block that wraps takes its previous instance's offset
// (`reused`): from when it is made when the plan knows that the previous
// one is freed by then, else for the whole iteration.
struct Problem {
  BufferSet set;
  std::vector<uint8_t> reused;  // by live block
  // Blocks that wrap and take their place only once the previous instance
  // is freed: other blocks may lie there in between.
  std::vector<uint32_t> handed_over_requests;
};

// Buffer ids are their positions in the set.
void Add(BufferSet& set, uint64_t bytes, int64_t lower, int64_t upper,
         std::optional<uint64_t> offset) {
  set.buffers.push_back({.id = set.buffers.size(),
                         .lower = lower,
                         .upper = upper,
                         .size = bytes,
                         .offset = offset});
}

Problem PlacementProblem(const LoopPlan& plan,
                         const std::vector<LiveBlock>& live) {
  Problem problem;
  problem.reused.assign(live.size(), 0);
  // By request: the live block holding its previous instance, if it wraps.
  std::vector<int64_t> wrap_place(plan.requests.size(), -1);
  for (size_t g = 0; g < live.size(); ++g) {
    const int64_t j = live[g].previous_request;
    if (j >= 0 && plan.requests[j].wraps &&
        live[g].bytes >= plan.requests[j].bytes) {
      wrap_place[j] = static_cast<int64_t>(g);
      problem.reused[g] = 1;
    }
  }
  std::vector<uint8_t> handed_over(live.size(), 0);  // freed before reuse
  for (const Buffer& buffer : plan.arena_buffers) {
    const int64_t place = wrap_place[buffer.id];
    if (place < 0) {
      Add(problem.set, buffer.size, buffer.lower, buffer.upper, std::nullopt);
      continue;
    }
    const PlannedRequest& request = plan.requests[buffer.id];
    const int64_t until = LiveUntil(plan, live[place]);
    handed_over[place] = until <= request.allocated;
    if (handed_over[place])
      problem.handed_over_requests.push_back(static_cast<uint32_t>(buffer.id));
    Add(problem.set, buffer.size,
        handed_over[place] ? request.allocated : buffer.lower, buffer.upper,
        live[place].offset);
  }
  for (size_t g = 0; g < live.size(); ++g) {
    const int64_t until = LiveUntil(plan, live[g]);
    // The place of a block that wraps: what its new instance leaves of the
    // old block stays taken until the old one is freed (all of it, when the
    // new one is made after that).
    const uint64_t kept = problem.reused[g] && !handed_over[g]
                              ? plan.requests[live[g].previous_request].bytes
                              : 0;
    if (kept == 0 && until < plan.iteration_events) problem.reused[g] = 1;
    if (live[g].bytes > kept)
      Add(problem.set, live[g].bytes - kept, 0, until, live[g].offset + kept);
  }
  return problem;
}

// For each request, the reused live blocks its planned place overlaps.
void FindGates(const std::vector<LiveBlock>& live, PlacementAround& result) {
  result.gate_begin.reserve(result.plan.requests.size() + 1);
  for (const PlannedRequest& request : result.plan.requests) {
    result.gate_begin.push_back(static_cast<uint32_t>(result.gates.size()));
    if (!request.in_arena) continue;
    for (size_t g = 0; g < live.size(); ++g) {
      if (result.reused[g] && Overlap(request.offset, request.bytes,
                                      live[g].offset, live[g].bytes)) {
        result.gates.push_back(static_cast<uint32_t>(g));
      }
    }
  }
  result.gate_begin.push_back(static_cast<uint32_t>(result.gates.size()));
}

// For each request, the slots of the blocks that wrap whose places it
// overlaps: it lies there between an old instance's free and the new one.
void FindGuards(const std::vector<uint32_t>& handed_over,
                PlacementAround& result) {
  const std::vector<PlannedRequest>& requests = result.plan.requests;
  result.guard_begin.reserve(requests.size() + 1);
  for (const PlannedRequest& request : requests) {
    result.guard_begin.push_back(static_cast<uint32_t>(result.guards.size()));
    if (!request.in_arena || request.wraps) continue;
    for (uint32_t w : handed_over) {
      if (Overlap(request.offset, request.bytes, requests[w].offset,
                  requests[w].bytes)) {
        result.guards.push_back(requests[w].slot);
      }
    }
  }
  result.guard_begin.push_back(static_cast<uint32_t>(result.guards.size()));
}

}  // namespace

absl::StatusOr<PlacementAround> PlaceAround(const LoopPlan& plan,
                                            const std::vector<LiveBlock>& live,
                                            const PlaceAroundOptions& options) {
  Problem problem = PlacementProblem(plan, live);
  if (const uint64_t peak = PeakLiveBytes(problem.set); peak > options.limit) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the iteration around %d live blocks needs %d bytes at its peak; "
        "there are %d",
        live.size(), peak, options.limit));
  }
  OptimalPlanOptions optimal;
  optimal.keep_given_offsets = true;
  optimal.alignment = plan.arena_alignment;
  optimal.time_limit_seconds = options.seconds;
  optimal.counted_time = true;
  optimal.cancel = options.cancel;
  absl::StatusOr<OptimalPlanResult> placed = PlanOptimal(problem.set, optimal);
  if (!placed.ok()) return placed.status();
  if (absl::Status valid = CheckPlacement(placed->placed, plan.arena_alignment);
      !valid.ok()) {
    return absl::InternalError(absl::StrFormat(
        "placement around %d live blocks: %s", live.size(), valid.message()));
  }
  PlacementAround result;
  result.plan = plan;
  result.reused = std::move(problem.reused);
  std::vector<uint64_t> offset_of_request(plan.requests.size(), 0);
  for (size_t b = 0; b < plan.arena_buffers.size(); ++b) {
    offset_of_request[plan.arena_buffers[b].id] =
        *placed->placed.buffers[b].offset;
  }
  AssignOffsets(offset_of_request, result.plan);
  result.plan.arena_bytes = placed->total_size;
  FindGates(live, result);
  FindGuards(problem.handed_over_requests, result);
  return result;
}

}  // namespace tensormem::alloc_internal
