#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "tensormem/trace/importers.h"

namespace tensormem {

absl::StatusOr<Trace> BufferSetToTrace(const BufferSet& set) {
  struct Step {
    int64_t time;
    bool is_alloc;  // false sorts first: frees before allocations
    size_t buffer;
  };
  std::vector<Step> steps;
  steps.reserve(2 * set.buffers.size());
  absl::flat_hash_set<uint64_t> ids;
  for (size_t i = 0; i < set.buffers.size(); ++i) {
    const Buffer& buffer = set.buffers[i];
    if (buffer.upper <= buffer.lower) {
      return absl::InvalidArgumentError(
          absl::StrFormat("buffer %d: upper %d must exceed lower %d", buffer.id,
                          buffer.upper, buffer.lower));
    }
    if (!ids.insert(buffer.id).second) {
      return absl::InvalidArgumentError(
          absl::StrFormat("duplicate buffer id %d", buffer.id));
    }
    steps.push_back({buffer.lower, true, i});
    steps.push_back({buffer.upper, false, i});
  }
  // Stable: buffers that start (or end) together keep the set's order.
  std::stable_sort(
      steps.begin(), steps.end(), [](const Step& a, const Step& b) {
        return a.time != b.time ? a.time < b.time : a.is_alloc < b.is_alloc;
      });
  Trace trace;
  trace.events.reserve(steps.size());
  for (const Step& step : steps) {
    const Buffer& buffer = set.buffers[step.buffer];
    trace.events.push_back(step.is_alloc
                               ? TraceEvent::Alloc(buffer.id, buffer.size)
                               : TraceEvent::Free(buffer.id));
  }
  return trace;
}

absl::StatusOr<BufferSet> TraceToBufferSet(const Trace& trace,
                                           IntervalConvention convention) {
  BufferSet set;
  set.convention = convention;
  absl::flat_hash_map<uint64_t, size_t> live;  // trace id -> buffer index
  absl::flat_hash_set<uint64_t> ever_allocated;
  bool ids_repeat = false;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& event = trace.events[i];
    if (event.op == TraceOp::kAlloc) {
      if (event.failed) continue;
      if (!live.try_emplace(event.id, set.buffers.size()).second) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "event %d: allocation of id %d, which is already live", i,
            event.id));
      }
      ids_repeat |= !ever_allocated.insert(event.id).second;
      Buffer buffer;
      buffer.id = event.id;
      buffer.lower = static_cast<int64_t>(i);
      buffer.size = event.bytes;
      set.buffers.push_back(buffer);
    } else {
      auto it = live.find(event.id);
      if (it == live.end()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "event %d: free of id %d, which is not live", i, event.id));
      }
      set.buffers[it->second].upper = static_cast<int64_t>(i);
      live.erase(it);
    }
  }
  for (const auto& [id, index] : live) {
    set.buffers[index].upper = static_cast<int64_t>(trace.events.size());
  }
  if (ids_repeat) {
    for (size_t i = 0; i < set.buffers.size(); ++i) set.buffers[i].id = i;
  }
  return set;
}

}  // namespace tensormem
