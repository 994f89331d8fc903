#include "alloc/loop_unroll.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"

namespace tensormem::alloc_internal {

namespace {

using HandedOn = absl::flat_hash_map<int64_t, std::vector<uint64_t>>;

// A repeated event happens one iteration later: the block it frees was made
// one iteration later too.
LoopEvent Later(LoopEvent event, uint64_t period) {
  if (event.kind == LoopEventKind::kFree && event.value != kUnloggedBlock)
    event.value += period;
  return event;
}

// The frees, at event `at` of an iteration whose first allocation is
// `first`, of the blocks the iteration before handed on to it.
void AppendHandedOnFrees(const HandedOn& handed_on, size_t at, uint64_t first,
                         uint64_t period, std::vector<LoopEvent>& events) {
  const auto it = handed_on.find(static_cast<int64_t>(at));
  if (it == handed_on.end()) return;
  for (uint64_t j : it->second) {
    // Made one iteration before, at allocation first + j.
    if (first + j >= period) {
      events.push_back(
          {.kind = LoopEventKind::kFree, .value = first + j - period});
    }
  }
}

// Events [begin, end) of the history, one iteration later when `later`:
// the blocks handed on to them are freed where the history's next iteration
// freed them, and the iteration's own frees of older blocks (whatever
// iteration made them) are left out.
void AppendIteration(const LoopHistory& history, size_t begin, size_t end,
                     const LoopShape& shape, bool later,
                     const HandedOn& handed_on,
                     std::vector<LoopEvent>& events) {
  const uint64_t first = shape.first_sequence + (later ? shape.period : 0);
  for (size_t e = begin; e < end; ++e) {
    AppendHandedOnFrees(handed_on, e - begin, first, shape.period, events);
    const LoopEvent& event = history.events[e];
    if (event.kind == LoopEventKind::kFree && event.value != kUnloggedBlock &&
        event.value < shape.first_sequence) {
      continue;
    }
    events.push_back(later ? Later(event, shape.period) : event);
  }
}

}  // namespace

UnrolledLoop UnrollTwice(const LoopHistory& history, const LoopShape& shape,
                         size_t begin, size_t end,
                         const std::vector<int64_t>& freed_next) {
  UnrolledLoop unrolled;
  unrolled.shape = shape;
  unrolled.shape.period = 2 * shape.period;
  unrolled.history.first_sequence = shape.first_sequence;
  std::vector<LoopEvent>& events = unrolled.history.events;
  const size_t next_end = std::min(history.events.size(), end + (end - begin));
  events.reserve(2 * (end - begin) + (next_end - end) + 2);
  // The iteration's blocks that the next one frees, by when (j: allocation
  // first_sequence + j of the iteration).
  HandedOn handed_on;
  for (size_t j = 0; j < freed_next.size(); ++j)
    if (freed_next[j] >= 0) handed_on[freed_next[j]].push_back(j);
  const LoopEvent mark{.kind = LoopEventKind::kMark};
  if (shape.marked) events.push_back(mark);
  AppendIteration(history, begin, end, shape, false, handed_on, events);
  if (shape.marked) events.push_back(mark);
  AppendIteration(history, begin, end, shape, true, handed_on, events);
  // The history's next iteration (for a marked loop, from its mark on) stands
  // for the next unrolled iteration's first half.
  for (size_t e = end; e < next_end; ++e)
    events.push_back(Later(history.events[e], shape.period));
  return unrolled;
}

}  // namespace tensormem::alloc_internal
