// BuildLoopPlan: one iteration of a found loop, cut out of the history and
// placed in an arena (loop_plan.h).
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "alloc/loop_index.h"
#include "alloc/loop_plan.h"
#include "alloc/loop_unroll.h"
#include "tensormem/core/checked_math.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/solver/optimal_planner.h"
#include "tensormem/plan/strategy_registry.h"

namespace tensormem::alloc_internal {
namespace {

// Offsets and sizes in the arena are multiples of this, as BFC chunks are.
constexpr uint64_t kArenaGranularity = 256;
// An iteration may hand on at most 1/this of the bytes it allocates to the
// next (loss values, a step counter); more, and it is a repetition inside an
// iteration.
constexpr uint64_t kMaxOutlivingShare = 8;

// The events of the iteration: [begin, end) of the history.
absl::StatusOr<std::pair<size_t, size_t>> IterationEvents(
    const LoopHistory& history, const IndexedHistory& index,
    const LoopShape& shape) {
  const uint64_t first = shape.first_sequence - history.first_sequence;
  const uint64_t last = first + shape.period;  // the next iteration's first
  if (shape.first_sequence < history.first_sequence || shape.period == 0 ||
      last > index.allocs.size() ||
      (!shape.marked && last == index.allocs.size())) {
    return absl::InvalidArgumentError(
        "the history does not hold the iteration");
  }
  if (!shape.marked)
    return std::make_pair(size_t{index.allocs[first]},
                          size_t{index.allocs[last]});
  // Marked: from the mark before the first allocation to the mark after the
  // last.
  const uint32_t first_event = index.allocs[first];
  const uint32_t last_event = index.allocs[last - 1];
  auto after =
      std::upper_bound(index.marks.begin(), index.marks.end(), last_event);
  auto before =
      std::lower_bound(index.marks.begin(), index.marks.end(), first_event);
  if (after == index.marks.end() || before == index.marks.begin())
    return absl::InvalidArgumentError("the iteration's marks are missing");
  return std::make_pair(size_t{*(before - 1)} + 1, size_t{*after});
}

// When one allocation of the iteration is freed, in event times counted from
// the iteration's first event: within it, or within the next one.
struct Lifetime {
  int64_t allocated = -1;
  int64_t freed = -1;       // in this iteration; -1: not in it
  int64_t freed_next = -1;  // in the next; -1: not in it either
};

std::vector<Lifetime> Lifetimes(const LoopHistory& history,
                                const LoopShape& shape, size_t begin,
                                size_t end) {
  std::vector<Lifetime> lifetimes(shape.period);
  const size_t next_end = std::min(history.events.size(), end + (end - begin));
  size_t next = 0;
  for (size_t e = begin; e < next_end; ++e) {
    const LoopEvent& event = history.events[e];
    if (event.kind == LoopEventKind::kAlloc && e < end) {
      lifetimes[next++].allocated = static_cast<int64_t>(e - begin);
    }
    if (event.kind != LoopEventKind::kFree || event.value == kUnloggedBlock ||
        event.value < shape.first_sequence ||
        event.value - shape.first_sequence >= shape.period) {
      continue;
    }
    Lifetime& lifetime = lifetimes[event.value - shape.first_sequence];
    if (e < end) {
      lifetime.freed = static_cast<int64_t>(e - begin);
    } else {
      lifetime.freed_next = static_cast<int64_t>(e - end);
    }
  }
  return lifetimes;
}

// frees_before, free_rank and previous_freed: the order of the arena's frees
// within the iteration, how many each allocation waits for, and when the
// previous iteration's instances go.
void OrderFrees(const LoopHistory& history, size_t begin, size_t end,
                LoopPlan& plan) {
  uint32_t frees = 0;
  size_t next = 0;
  const uint64_t first = plan.shape.first_sequence;
  const uint64_t period = plan.shape.period;
  for (size_t e = begin; e < end; ++e) {
    const LoopEvent& event = history.events[e];
    if (event.kind == LoopEventKind::kAlloc) {
      plan.requests[next++].frees_before = frees;
      continue;
    }
    if (event.kind != LoopEventKind::kFree || event.value == kUnloggedBlock)
      continue;
    if (event.value >= first && event.value - first < period) {
      plan.requests[event.value - first].free_rank = frees++;
      plan.free_order.push_back(static_cast<uint32_t>(event.value - first));
    } else if (event.value < first && event.value + period >= first) {
      // An instance of the previous iteration.
      plan.requests[event.value + period - first].previous_freed =
          static_cast<int64_t>(e - begin);
    }
  }
  plan.arena_frees = frees;
}

// The iteration before `shape`'s when the history holds it and it makes the
// same requests (loops found from their period only): the history then
// also holds all of the iteration after it, and so every block that the
// next iteration frees.
std::optional<LoopShape> EarlierIteration(const LoopHistory& history,
                                          const IndexedHistory& index,
                                          const LoopShape& shape) {
  if (shape.marked ||
      shape.first_sequence < history.first_sequence + shape.period) {
    return std::nullopt;
  }
  const size_t earlier =
      shape.first_sequence - history.first_sequence - shape.period;
  if (earlier + 2 * shape.period > index.allocs.size()) return std::nullopt;
  for (size_t j = 0; j < shape.period; ++j) {
    if (!AllocAt(history, index, earlier + j)
             .SameRequest(AllocAt(history, index, earlier + shape.period + j)))
      return std::nullopt;
  }
  LoopShape shifted = shape;
  shifted.first_sequence -= shape.period;
  return shifted;
}

// Bytes the iteration allocates, by what becomes of them.
struct ByFate {
  uint64_t in_arena = 0;
  uint64_t outliving = 0;    // not freed within the iteration, of which
  uint64_t overlapping = 0;  // freed in the next after their next instance
  uint64_t undecided = 0;    // not freed where the history was logged
};

// Fills plan.requests and the arena's buffers (buffer_of: by request).
ByFate ClassifyRequests(const LoopHistory& history, const IndexedHistory& index,
                        const std::vector<Lifetime>& lifetimes,
                        int64_t iteration_events, LoopPlan& plan,
                        BufferSet& set, std::vector<size_t>& buffer_of) {
  const LoopShape& shape = plan.shape;
  ByFate bytes;
  for (size_t j = 0; j < shape.period; ++j) {
    PlannedRequest& request = plan.requests[j];
    request.request = history.events[index.allocs[shape.first_sequence -
                                                  history.first_sequence + j]];
    const Lifetime& lifetime = lifetimes[j];
    request.allocated = lifetime.allocated;
    // A block freed in the next iteration before its own next instance is
    // made (gradients kept until the next step clears them) holds its place
    // for the whole iteration.
    request.wraps = lifetime.freed < 0 && lifetime.freed_next >= 0 &&
                    lifetime.freed_next < lifetime.allocated;
    request.in_arena = lifetime.freed >= 0 || request.wraps;
    // The request was served, so its size is bounded by the memory limit.
    const uint64_t rounded = RoundUp(request.request.value, kArenaGranularity);
    if (!request.in_arena) {
      bytes.outliving += request.request.value;
      (lifetime.freed_next >= 0 ? bytes.overlapping : bytes.undecided) +=
          request.request.value;
      plan.outliving_bytes += rounded;
      continue;
    }
    bytes.in_arena += request.request.value;
    request.bytes = rounded;
    plan.arena_alignment =
        std::max<uint64_t>(plan.arena_alignment, request.request.alignment);
    buffer_of[j] = set.buffers.size();
    set.buffers.push_back(
        Buffer{.id = j,
               .lower = request.wraps ? 0 : lifetime.allocated,
               .upper = request.wraps ? iteration_events : lifetime.freed,
               .size = request.bytes});
  }
  return bytes;
}

// Places the arena's buffers by best fit, then by the optimal planner when
// given time and it finds less.
absl::Status PlaceArena(const BufferSet& set,
                        const std::vector<size_t>& buffer_of,
                        double search_seconds, LoopPlan& plan) {
  PlanOptions options;
  options.alignment = plan.arena_alignment;
  absl::StatusOr<PlanResult> placed =
      RunStrategy("best_fit_multi", set, PlanMode::kOffsets, options);
  if (!placed.ok()) return placed.status();
  if (search_seconds > 0 && placed->total_size > placed->lower_bound) {
    // The search starts from nothing: it may find less, or nothing in time.
    // Its time is counted in work: the same plan on every run.
    OptimalPlanOptions search;
    search.time_limit_seconds = search_seconds;
    search.counted_time = true;
    search.alignment = plan.arena_alignment;
    absl::StatusOr<OptimalPlanResult> searched = PlanOptimal(set, search);
    if (searched.ok() && searched->total_size < placed->total_size) {
      placed->total_size = searched->total_size;
      for (size_t i = 0; i < set.buffers.size(); ++i)
        placed->offsets[i] = *searched->placed.buffers[i].offset;
    }
  }
  plan.arena_bytes = placed->total_size;
  plan.peak_arena_live = placed->lower_bound;
  std::vector<uint64_t> offset_of_request(plan.requests.size(), 0);
  for (size_t j = 0; j < plan.requests.size(); ++j) {
    if (plan.requests[j].in_arena)
      offset_of_request[j] = placed->offsets[buffer_of[j]];
  }
  AssignOffsets(offset_of_request, plan);
  return absl::OkStatus();
}

// may_unroll: once (an unrolled plan is not unrolled again); may_look_back:
// once (the iteration before has its next one logged).
absl::StatusOr<LoopPlan> BuildPlan(const LoopHistory& history,
                                   const LoopShape& shape,
                                   double search_seconds, bool may_unroll,
                                   bool may_look_back) {
  const IndexedHistory index = Index(history);
  absl::StatusOr<std::pair<size_t, size_t>> range =
      IterationEvents(history, index, shape);
  if (!range.ok()) return range.status();
  const auto [begin, end] = *range;
  LoopPlan plan;
  plan.shape = shape;
  plan.requests.resize(shape.period);
  plan.iteration_events = static_cast<int64_t>(end - begin);
  const std::vector<Lifetime> lifetimes = Lifetimes(history, shape, begin, end);
  BufferSet set;
  std::vector<size_t> buffer_of(shape.period, 0);
  const ByFate bytes = ClassifyRequests(
      history, index, lifetimes, plan.iteration_events, plan, set, buffer_of);
  // A stretch that repeats inside a real iteration (a stack of equal layers)
  // hands blocks on from one repetition to the next: at a true iteration
  // boundary almost nothing the iteration made is still live.
  if (set.buffers.empty() ||
      bytes.outliving * kMaxOutlivingShare > bytes.in_arena) {
    return absl::FailedPreconditionError(absl::StrCat(
        "not an iteration: ", bytes.outliving,
        " of the bytes it allocates outlive it, ", bytes.in_arena, " do not"));
  }
  // Blocks the logged part of the next iteration does not free may yet
  // overlap their next instances: the one before, if it repeats, is logged.
  const bool next_logged = history.events.size() >= end + (end - begin);
  const uint64_t arena_peak = PeakLiveBytes(set);
  if (may_unroll && may_look_back && !next_logged &&
      bytes.undecided * kUnrollShare >= arena_peak) {
    if (std::optional<LoopShape> earlier =
            EarlierIteration(history, index, shape))
      return BuildPlan(history, *earlier, search_seconds, true, false);
  }
  if (may_unroll && bytes.overlapping * kUnrollShare >= arena_peak) {
    std::vector<int64_t> freed_next(shape.period, -1);
    for (size_t j = 0; j < shape.period; ++j)
      if (lifetimes[j].freed < 0) freed_next[j] = lifetimes[j].freed_next;
    const UnrolledLoop twice =
        UnrollTwice(history, shape, begin, end, freed_next);
    absl::StatusOr<LoopPlan> unrolled =
        BuildPlan(twice.history, twice.shape, search_seconds, false, false);
    if (unrolled.ok()) unrolled->iterations = 2;
    return unrolled;
  }
  if (absl::Status placed = PlaceArena(set, buffer_of, search_seconds, plan);
      !placed.ok()) {
    return placed;
  }
  OrderFrees(history, begin, end, plan);
  plan.arena_buffers = std::move(set.buffers);
  return plan;
}

}  // namespace

absl::StatusOr<LoopPlan> BuildLoopPlan(const LoopHistory& history,
                                       const LoopShape& shape,
                                       double search_seconds) {
  return BuildPlan(history, shape, search_seconds, /*may_unroll=*/true,
                   /*may_look_back=*/true);
}

void AssignOffsets(const std::vector<uint64_t>& offset_of_request,
                   LoopPlan& plan) {
  plan.slot_of_offset.clear();
  for (size_t j = 0; j < plan.requests.size(); ++j) {
    PlannedRequest& request = plan.requests[j];
    if (!request.in_arena) continue;
    request.offset = offset_of_request[j];
    request.slot =
        plan.slot_of_offset
            .try_emplace(request.offset,
                         static_cast<uint32_t>(plan.slot_of_offset.size()))
            .first->second;
  }
}

}  // namespace tensormem::alloc_internal
