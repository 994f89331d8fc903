#include "alloc/loop_plan.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "tensormem/core/checked_math.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/strategy_registry.h"

namespace tensormem::alloc_internal {
namespace {

// Offsets and sizes in the arena are multiples of this, as BFC chunks are.
constexpr uint64_t kArenaGranularity = 256;
// An iteration may hand on at most 1/this of the bytes it allocates to the
// next (loss values, a step counter); more, and it is a repetition inside an
// iteration.
constexpr uint64_t kMaxOutlivingShare = 8;

// A request's hash, the same in every process (keys must compare across
// runs of the detector, not only within one).
uint64_t RequestHash(const LoopEvent& event) {
  uint64_t x = event.value ^ (uint64_t{event.alignment} << 32) ^
               static_cast<uint32_t>(event.stream) ^ 0x9e3779b97f4a7c15u;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

struct IndexedHistory {
  std::vector<uint32_t> allocs;  // event index of each allocation
  std::vector<uint32_t> marks;   // event index of each mark
};

IndexedHistory Index(const LoopHistory& history) {
  IndexedHistory index;
  for (uint32_t i = 0; i < history.events.size(); ++i) {
    const LoopEventKind kind = history.events[i].kind;
    if (kind == LoopEventKind::kAlloc) index.allocs.push_back(i);
    if (kind == LoopEventKind::kMark) index.marks.push_back(i);
  }
  return index;
}

const LoopEvent& AllocAt(const LoopHistory& history,
                         const IndexedHistory& index, size_t i) {
  return history.events[index.allocs[i]];
}

// Rotation-invariant: the same for every phase of one loop.
uint64_t LoopKey(const LoopHistory& history, const IndexedHistory& index,
                 size_t first, size_t period) {
  uint64_t sum = period * 0x2545f4914f6cdd1du;
  for (size_t i = first; i < first + period; ++i)
    sum += RequestHash(AllocAt(history, index, i));
  return sum;
}

// z[p]: how many allocations, counted back from the last, equal the ones p
// earlier (the Z function of the reversed request sequence).
std::vector<size_t> RepeatLengths(const LoopHistory& history,
                                  const IndexedHistory& index) {
  const size_t n = index.allocs.size();
  auto at = [&](size_t i) -> const LoopEvent& {
    return AllocAt(history, index, n - 1 - i);
  };
  std::vector<size_t> z(n, 0);
  if (n > 0) z[0] = n;
  size_t left = 0, right = 0;  // [left, right): the rightmost match so far
  for (size_t i = 1; i < n; ++i) {
    if (i < right) z[i] = std::min(right - i, z[i - left]);
    while (i + z[i] < n && at(z[i]).SameRequest(at(i + z[i]))) ++z[i];
    if (i + z[i] > right) left = i, right = i + z[i];
  }
  return z;
}

// Live bytes just before allocation `first` ... `last` (indices into the
// history's allocations), for the quietest point of an iteration.
std::vector<uint64_t> LiveBeforeAllocs(const LoopHistory& history, size_t first,
                                       size_t last) {
  std::vector<uint64_t> sizes;
  std::vector<uint64_t> live_before;
  uint64_t live = 0;
  for (const LoopEvent& event : history.events) {
    if (event.kind == LoopEventKind::kAlloc) {
      const size_t i = sizes.size();
      if (i >= first && i <= last) live_before.push_back(live);
      sizes.push_back(event.value);
      live += event.value;
    } else if (event.kind == LoopEventKind::kFree &&
               event.value != kUnloggedBlock &&
               event.value >= history.first_sequence &&
               event.value - history.first_sequence < sizes.size()) {
      live -= sizes[event.value - history.first_sequence];
    }
  }
  return live_before;
}

std::optional<LoopShape> FindMarkedLoop(
    const LoopHistory& history, const IndexedHistory& index,
    const absl::flat_hash_set<uint64_t>& rejected) {
  const std::vector<uint32_t>& marks = index.marks;
  if (marks.size() < 3) return std::nullopt;
  // Allocations before each of the last three marks.
  auto allocs_before = [&](uint32_t event) {
    return static_cast<size_t>(
        std::lower_bound(index.allocs.begin(), index.allocs.end(), event) -
        index.allocs.begin());
  };
  const size_t a = allocs_before(marks[marks.size() - 3]);
  const size_t b = allocs_before(marks[marks.size() - 2]);
  const size_t c = allocs_before(marks.back());
  const size_t period = c - b;
  if (period == 0 || b - a != period) return std::nullopt;
  for (size_t i = 0; i < period; ++i) {
    if (!AllocAt(history, index, a + i)
             .SameRequest(AllocAt(history, index, b + i)))
      return std::nullopt;
  }
  const uint64_t key = LoopKey(history, index, b, period);
  if (rejected.contains(key)) return std::nullopt;
  return LoopShape{history.first_sequence + b, period, true, key};
}

}  // namespace

std::optional<LoopShape> FindLoop(
    const LoopHistory& history, const absl::flat_hash_set<uint64_t>& rejected) {
  const IndexedHistory index = Index(history);
  if (!index.marks.empty()) return FindMarkedLoop(history, index, rejected);
  const size_t n = index.allocs.size();
  const std::vector<size_t> z = RepeatLengths(history, index);
  // Periods that repeat a whole iteration and one allocation more, by the
  // stretch they explain (longest first), then by period (shortest first).
  std::vector<std::pair<size_t, size_t>> candidates;  // (-span, period)
  for (size_t p = 1; 2 * p + 1 <= n; ++p) {
    if (z[p] >= p + 1) candidates.emplace_back(n - (z[p] + p), p);
  }
  std::sort(candidates.begin(), candidates.end());
  size_t best_period = 0;
  uint64_t best_key = 0;
  std::vector<size_t> rejected_periods;  // here: their multiples are too
  for (const auto& candidate : candidates) {
    const size_t unexplained = candidate.first, p = candidate.second;
    // A repetition inside an iteration (equal layers, a loop over
    // parameters) explains a stretch; the program's loop, once seen twice,
    // most of what was logged.
    if (2 * (n - unexplained) < n) break;
    const uint64_t key = LoopKey(history, index, n - p, p);
    if (rejected.contains(key) ||
        absl::c_any_of(rejected_periods,
                       [p](size_t q) { return p % q == 0; })) {
      rejected_periods.push_back(p);
      continue;
    }
    best_period = p, best_key = key;
    break;
  }
  if (best_period == 0) return std::nullopt;
  // Begin the iteration where the fewest bytes are live: blocks that cross
  // a boundary cannot be planned.
  const size_t p = best_period;
  const std::vector<uint64_t> live =
      LiveBeforeAllocs(history, n - 2 * p, n - p - 1);
  const size_t quietest =
      std::min_element(live.begin(), live.end()) - live.begin();
  return LoopShape{history.first_sequence + (n - 2 * p) + quietest, p, false,
                   best_key};
}

namespace {

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

}  // namespace

namespace {

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

}  // namespace

absl::StatusOr<LoopPlan> BuildLoopPlan(const LoopHistory& history,
                                       const LoopShape& shape,
                                       double search_seconds) {
  const IndexedHistory index = Index(history);
  absl::StatusOr<std::pair<size_t, size_t>> range =
      IterationEvents(history, index, shape);
  if (!range.ok()) return range.status();
  const auto [begin, end] = *range;
  LoopPlan plan;
  plan.shape = shape;
  plan.requests.resize(shape.period);
  const std::vector<Lifetime> lifetimes = Lifetimes(history, shape, begin, end);
  BufferSet set;
  std::vector<size_t> buffer_of(shape.period, 0);
  uint64_t outliving = 0, arena_total = 0;
  for (size_t j = 0; j < shape.period; ++j) {
    PlannedRequest& request = plan.requests[j];
    request.request = history.events[index.allocs[shape.first_sequence -
                                                  history.first_sequence + j]];
    const Lifetime& lifetime = lifetimes[j];
    // A block freed in the next iteration before its own next instance is
    // made (gradients kept until the next step clears them) holds its place
    // for the whole iteration.
    request.wraps = lifetime.freed < 0 && lifetime.freed_next >= 0 &&
                    lifetime.freed_next < lifetime.allocated;
    request.in_arena = lifetime.freed >= 0 || request.wraps;
    (request.in_arena ? arena_total : outliving) += request.request.value;
    // The request was served, so its size is bounded by the memory limit.
    const uint64_t rounded = RoundUp(request.request.value, kArenaGranularity);
    if (!request.in_arena) {
      plan.outliving_bytes += rounded;
      continue;
    }
    request.bytes = rounded;
    plan.arena_alignment =
        std::max<uint64_t>(plan.arena_alignment, request.request.alignment);
    buffer_of[j] = set.buffers.size();
    set.buffers.push_back(
        Buffer{.id = j,
               .lower = request.wraps ? 0 : lifetime.allocated,
               .upper = request.wraps ? static_cast<int64_t>(end - begin)
                                      : lifetime.freed,
               .size = request.bytes});
  }
  // A stretch that repeats inside a real iteration (a stack of equal layers)
  // hands blocks on from one repetition to the next: at a true iteration
  // boundary almost nothing the iteration made is still live.
  if (set.buffers.empty() || outliving * kMaxOutlivingShare > arena_total) {
    return absl::FailedPreconditionError(
        absl::StrCat("not an iteration: ", outliving,
                     " of the bytes it allocates outlive "
                     "it, ",
                     arena_total, " do not"));
  }
  PlanOptions options;
  options.alignment = plan.arena_alignment;
  absl::StatusOr<PlanResult> placed =
      RunStrategy("best_fit_multi", set, PlanMode::kOffsets, options);
  if (!placed.ok()) return placed.status();
  if (search_seconds > 0 && placed->total_size > placed->lower_bound) {
    // The search starts from nothing: it may find less, or nothing in time.
    options.allow_slow = true;
    options.time_limit_seconds = search_seconds;
    absl::StatusOr<PlanResult> searched =
        RunStrategy("optimal", set, PlanMode::kOffsets, options);
    if (searched.ok() && searched->total_size < placed->total_size)
      placed = std::move(searched);
  }
  plan.arena_bytes = placed->total_size;
  plan.peak_arena_live = placed->lower_bound;
  std::vector<uint64_t> offset_of_request(shape.period, 0);
  for (size_t j = 0; j < shape.period; ++j) {
    if (plan.requests[j].in_arena)
      offset_of_request[j] = placed->offsets[buffer_of[j]];
  }
  AssignOffsets(offset_of_request, plan);
  OrderFrees(history, begin, end, plan);
  plan.arena_buffers = std::move(set.buffers);
  plan.iteration_events = static_cast<int64_t>(end - begin);
  return plan;
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
