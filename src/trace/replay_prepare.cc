// PreparedTrace::Prepare: resolves ids to dense slots once, so every replay
// (the timed one, the measured one, each bisection trial) indexes a vector.
#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "tensormem/core/checked_math.h"
#include "tensormem/trace/replay.h"

namespace tensormem {

absl::StatusOr<PreparedTrace> PreparedTrace::Prepare(const Trace& trace) {
  PreparedTrace prepared;
  prepared.steps_.reserve(trace.events.size());
  prepared.ids_.reserve(trace.events.size());
  absl::flat_hash_map<uint64_t, uint32_t> live_slots;
  std::vector<uint64_t> slot_bytes;
  std::vector<uint32_t> free_slots;
  uint64_t live_bytes = 0;
  for (size_t index = 0; index < trace.events.size(); ++index) {
    const TraceEvent& event = trace.events[index];
    Step step{Op::kAlloc, 0, event.alignment, event.stream, event.bytes};
    if (event.alignment != 0 && !IsPowerOfTwo(event.alignment)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "event %d: alignment %d of id %d is not a power of two", index,
          event.alignment, event.id));
    }
    if (event.op == TraceOp::kAlloc && event.failed) {
      step.op = Op::kRecordedFailure;
    } else if (event.op == TraceOp::kAlloc) {
      if (live_slots.contains(event.id)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "event %d: allocation of id %d, which is already live", index,
            event.id));
      }
      if (free_slots.empty()) {
        free_slots.push_back(static_cast<uint32_t>(slot_bytes.size()));
        slot_bytes.push_back(0);
      }
      step.slot = free_slots.back();
      free_slots.pop_back();
      live_slots[event.id] = step.slot;
      slot_bytes[step.slot] = event.bytes;
      const std::optional<uint64_t> sum = CheckedAdd(live_bytes, event.bytes);
      if (!sum) {
        return absl::InvalidArgumentError(
            absl::StrFormat("event %d: live bytes overflow 64 bits", index));
      }
      live_bytes = *sum;
      prepared.peak_live_bytes_ =
          std::max(prepared.peak_live_bytes_, live_bytes);
    } else {
      const auto it = live_slots.find(event.id);
      if (it == live_slots.end()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "event %d: free of id %d, which is not live", index, event.id));
      }
      step.op = Op::kFree;
      step.slot = it->second;
      step.bytes = slot_bytes[step.slot];
      live_bytes -= step.bytes;
      free_slots.push_back(step.slot);
      live_slots.erase(it);
    }
    prepared.steps_.push_back(step);
    prepared.ids_.push_back(event.id);
  }
  prepared.slot_count_ = slot_bytes.size();
  return prepared;
}

}  // namespace tensormem
