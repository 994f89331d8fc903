#include "alloc/loop_plan.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/strategy_registry.h"

namespace tensormem::alloc_internal {
namespace {

// Offsets and sizes in the arena are multiples of this, as BFC chunks are.
constexpr uint64_t kArenaGranularity = 256;

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
std::vector<uint64_t> LiveBeforeAllocs(const LoopHistory& history,
                                       size_t first, size_t last) {
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
  size_t best_period = 0, best_span = 0;
  uint64_t best_key = 0;
  for (size_t p = 1; 2 * p + 1 <= n; ++p) {
    if (z[p] < p + 1 || z[p] + p <= best_span) continue;
    const uint64_t key = LoopKey(history, index, n - p, p);
    if (rejected.contains(key)) continue;
    best_period = p, best_span = z[p] + p, best_key = key;
  }
  if (best_period == 0) return std::nullopt;
  // Begin the iteration where the fewest bytes are live: blocks that cross
  // a boundary cannot be planned.
  const size_t p = best_period;
  const std::vector<uint64_t> live = LiveBeforeAllocs(history, n - 2 * p,
                                                      n - p - 1);
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
    return absl::InvalidArgumentError("the history does not hold the iteration");
  }
  if (!shape.marked) return std::make_pair(size_t{index.allocs[first]},
                                           size_t{index.allocs[last]});
  // Marked: from the mark before the first allocation to the mark after the
  // last.
  const uint32_t first_event = index.allocs[first];
  const uint32_t last_event = index.allocs[last - 1];
  auto after = std::upper_bound(index.marks.begin(), index.marks.end(),
                                last_event);
  auto before = std::lower_bound(index.marks.begin(), index.marks.end(),
                                 first_event);
  if (after == index.marks.end() || before == index.marks.begin())
    return absl::InvalidArgumentError("the iteration's marks are missing");
  return std::make_pair(size_t{*(before - 1)} + 1, size_t{*after});
}

}  // namespace

absl::StatusOr<LoopPlan> BuildLoopPlan(const LoopHistory& history,
                                       const LoopShape& shape) {
  const IndexedHistory index = Index(history);
  absl::StatusOr<std::pair<size_t, size_t>> range =
      IterationEvents(history, index, shape);
  if (!range.ok()) return range.status();
  const auto [begin, end] = *range;
  LoopPlan plan;
  plan.shape = shape;
  plan.requests.resize(shape.period);
  std::vector<int64_t> allocated_at(shape.period, -1);
  BufferSet set;
  std::vector<size_t> buffer_of(shape.period, 0);
  size_t next = 0;
  for (size_t e = begin; e < end; ++e) {
    const LoopEvent& event = history.events[e];
    const int64_t time = static_cast<int64_t>(e - begin);
    if (event.kind == LoopEventKind::kAlloc) {
      plan.requests[next].request = event;
      allocated_at[next++] = time;
      continue;
    }
    if (event.kind != LoopEventKind::kFree || event.value == kUnloggedBlock ||
        event.value < shape.first_sequence ||
        event.value - shape.first_sequence >= shape.period) {
      continue;
    }
    const size_t j = event.value - shape.first_sequence;
    PlannedRequest& request = plan.requests[j];
    request.in_arena = true;
    request.bytes = (request.request.value + kArenaGranularity - 1) /
                    kArenaGranularity * kArenaGranularity;
    plan.arena_alignment =
        std::max<uint64_t>(plan.arena_alignment, request.request.alignment);
    buffer_of[j] = set.buffers.size();
    set.buffers.push_back(
        Buffer{.id = j, .lower = allocated_at[j], .upper = time,
               .size = request.bytes});
  }
  if (set.buffers.empty())
    return absl::FailedPreconditionError("no block lives within the iteration");
  PlanOptions options;
  options.alignment = plan.arena_alignment;
  absl::StatusOr<PlanResult> placed =
      RunStrategy("best_fit_multi", set, PlanMode::kOffsets, options);
  if (!placed.ok()) return placed.status();
  plan.arena_bytes = placed->total_size;
  plan.peak_arena_live = placed->lower_bound;
  // The order of the arena's frees, and how many each allocation waits for.
  uint32_t frees = 0;
  next = 0;
  for (size_t e = begin; e < end; ++e) {
    const LoopEvent& event = history.events[e];
    if (event.kind == LoopEventKind::kAlloc) {
      PlannedRequest& request = plan.requests[next++];
      request.frees_before = frees;
      if (!request.in_arena) continue;
      request.offset = placed->offsets[buffer_of[next - 1]];
      request.slot =
          plan.slot_of_offset
              .try_emplace(request.offset,
                           static_cast<uint32_t>(plan.slot_of_offset.size()))
              .first->second;
    } else if (event.kind == LoopEventKind::kFree &&
               event.value != kUnloggedBlock &&
               event.value >= shape.first_sequence &&
               event.value - shape.first_sequence < shape.period) {
      plan.requests[event.value - shape.first_sequence].free_rank = frees++;
    }
  }
  plan.arena_frees = frees;
  return plan;
}

}  // namespace tensormem::alloc_internal
