#include "alloc/loop_unroll.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"

namespace tensormem::alloc_internal {

UnrolledLoop UnrollTwice(const LoopHistory& history, const LoopShape& shape,
                         size_t begin, size_t end,
                         const std::vector<int64_t>& freed_next) {
  const uint64_t first = shape.first_sequence;
  const uint64_t period = shape.period;
  UnrolledLoop unrolled;
  unrolled.shape = shape;
  unrolled.shape.period = 2 * period;
  unrolled.history.first_sequence = first;
  std::vector<LoopEvent>& events = unrolled.history.events;
  const size_t next_end = std::min(history.events.size(), end + (end - begin));
  events.reserve(2 * (end - begin) + (next_end - end) + 2);
  // A repeated event happens one iteration later: the block it frees was
  // made one iteration later too.
  auto later = [period](LoopEvent event) {
    if (event.kind == LoopEventKind::kFree && event.value != kUnloggedBlock)
      event.value += period;
    return event;
  };
  // The iteration's blocks that the next one frees, by when (j: allocation
  // first + j of the iteration).
  absl::flat_hash_map<int64_t, std::vector<uint64_t>> handed_on;
  for (size_t j = 0; j < freed_next.size(); ++j)
    if (freed_next[j] >= 0) handed_on[freed_next[j]].push_back(j);
  // Both iterations free the blocks handed on to them where the history's
  // next iteration freed them: the iteration's own frees of older blocks
  // belong to whatever came before the loop settled.
  auto append_iteration = [&](uint64_t shift) {
    for (size_t e = begin; e < end; ++e) {
      if (const auto it = handed_on.find(static_cast<int64_t>(e - begin));
          it != handed_on.end()) {
        for (uint64_t j : it->second) {
          // Made one iteration before, at allocation first + j + shift.
          const uint64_t made = first + j + shift;
          if (made >= period) {
            events.push_back(
                {.kind = LoopEventKind::kFree, .value = made - period});
          }
        }
      }
      const LoopEvent& event = history.events[e];
      if (event.kind != LoopEventKind::kFree || event.value == kUnloggedBlock ||
          event.value >= first) {
        events.push_back(shift == 0 ? event : later(event));
      }
    }
  };
  const LoopEvent mark{.kind = LoopEventKind::kMark};
  if (shape.marked) events.push_back(mark);
  append_iteration(0);
  if (shape.marked) events.push_back(mark);
  append_iteration(period);
  // The history's next iteration (for a marked loop, from its mark on) stands
  // for the next unrolled iteration's first half.
  for (size_t e = end; e < next_end; ++e)
    events.push_back(later(history.events[e]));
  return unrolled;
}

std::optional<LoopShape> EarlierIteration(const LoopHistory& history,
                                          const LoopShape& shape) {
  if (shape.marked || shape.period == 0 ||
      shape.first_sequence < history.first_sequence + shape.period) {
    return std::nullopt;
  }
  const uint64_t earlier = shape.first_sequence - shape.period;
  std::vector<const LoopEvent*> requests;  // from `earlier` on, 2 periods
  uint64_t sequence = history.first_sequence;
  for (const LoopEvent& event : history.events) {
    if (event.kind != LoopEventKind::kAlloc) continue;
    if (sequence++ >= earlier) requests.push_back(&event);
    if (requests.size() == 2 * shape.period) break;
  }
  if (requests.size() < 2 * shape.period) return std::nullopt;
  for (size_t j = 0; j < shape.period; ++j) {
    if (!requests[j]->SameRequest(*requests[j + shape.period]))
      return std::nullopt;
  }
  LoopShape shifted = shape;
  shifted.first_sequence = earlier;
  return shifted;
}

}  // namespace tensormem::alloc_internal
