#include "trace/recorded_segments.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "tensormem/core/checked_math.h"
#include "tensormem/core/units.h"

namespace tensormem::trace_internal {
namespace {

using Kind = RecordedSegmentEvent::Kind;

// Regions the recording lacks start this far above its highest segment.
constexpr uint64_t kFreshGap = kTiB;

}  // namespace

RecordedSegmentUpstream::RecordedSegmentUpstream(
    const PytorchRecording& recording)
    : recorded_(recording.segments) {
  uint64_t highest = 0;
  for (const RecordedSegmentEvent& event : recorded_) {
    highest = std::max(highest, event.address + event.bytes);
  }
  fresh_ = RoundUp(highest, kGiB) + kFreshGap;
}

void RecordedSegmentUpstream::BeginEvent(size_t event) {
  event_ = event;
  while (next_ < recorded_.size() && recorded_[next_].before_event < event) {
    ++next_;
  }
}

std::vector<RecordedSegmentEvent> RecordedSegmentUpstream::TakeLog() {
  return std::exchange(log_, {});
}

uint64_t RecordedSegmentUpstream::MatchRecorded(uint64_t bytes) {
  for (size_t i = next_;
       i < recorded_.size() && recorded_[i].before_event == event_; ++i) {
    const RecordedSegmentEvent& event = recorded_[i];
    if (!event.Adds()) continue;
    // Segments come in the recorded order: the first one not used is the
    // one this request stands for, or none is.
    if (event.bytes != bytes || OverlapsLive(event.address, bytes)) return 0;
    next_ = i + 1;
    return event.address;
  }
  return 0;
}

bool RecordedSegmentUpstream::OverlapsLive(uint64_t address,
                                           uint64_t bytes) const {
  auto after = live_.upper_bound(address);
  if (after != live_.end() && after->first < address + bytes) return true;
  return after != live_.begin() && std::prev(after)->second > address;
}

bool RecordedSegmentUpstream::Fits(uint64_t bytes) const {
  const auto after =
      std::upper_bound(capacity_.begin(), capacity_.end(), event_,
                       [](size_t event, const SnapshotCapacityStep& step) {
                         return event < static_cast<size_t>(step.event);
                       });
  // Regions placed before the first step's event (a warm start's) count
  // against the first step.
  const auto step = after == capacity_.begin() ? after : std::prev(after);
  if (step == capacity_.end()) return true;
  return bytes <= step->bytes && held_ <= step->bytes - bytes;
}

void* RecordedSegmentUpstream::Alloc(size_t bytes, size_t /*alignment*/,
                                     size_t* bytes_received) {
  if (!Fits(bytes)) return nullptr;
  uint64_t address = std::exchange(placed_next_, 0);
  if (address == 0 || OverlapsLive(address, bytes))
    address = MatchRecorded(bytes);
  if (address == 0) {
    address = fresh_;
    fresh_ += RoundUp(bytes, 2 * kMiB);
  }
  live_[address] = address + bytes;
  held_ += bytes;
  log_.push_back({Kind::kAlloc, 0, address, bytes, 0, event_});
  *bytes_received = bytes;
  return reinterpret_cast<void*>(address);
}

void RecordedSegmentUpstream::Free(void* ptr, size_t bytes) {
  const uint64_t address = reinterpret_cast<uint64_t>(ptr);
  live_.erase(address);
  held_ -= bytes;
  log_.push_back({Kind::kFree, 0, address, bytes, 0, event_});
}

}  // namespace tensormem::trace_internal
