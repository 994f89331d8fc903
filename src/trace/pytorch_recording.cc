#include "trace/pytorch_recording.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tensormem::trace_internal {
namespace {

constexpr int kRoundupIntervals = 16;  // 1 MiB to 32 GiB, one per power of two

// roundup_power2_divisions as PyTorch reports it: interval start in MiB ->
// divisions. nullopt when none is set.
std::optional<std::string> RoundupEntry(PickleValue divisions) {
  std::array<int64_t, kRoundupIntervals> values{};
  bool any = false;
  for (int i = 0; i < kRoundupIntervals; ++i) {
    const std::optional<PickleValue> value =
        divisions.Find(std::to_string(int64_t{1} << i));
    values[i] = value ? value->AsInt().value_or(0) : 0;
    any = any || values[i] > 1;
  }
  if (!any) return std::nullopt;
  if (std::all_of(values.begin(), values.end(),
                  [&](int64_t v) { return v == values[0]; })) {
    return absl::StrFormat("roundup_power2_divisions:%d", values[0]);
  }
  std::vector<std::string> items;
  for (int i = 0; i < kRoundupIntervals; ++i) {
    items.push_back(absl::StrFormat("%d:%d", int64_t{1} << i, values[i]));
  }
  return absl::StrCat("roundup_power2_divisions:[", absl::StrJoin(items, ","),
                      "]");
}

}  // namespace

void ReadAllocatorSettings(PickleValue settings, PytorchRecording& recording) {
  if (settings.kind() != PickleValue::Kind::kDict) return;
  std::vector<std::string> entries;
  if (std::optional<PickleValue> split = settings.Find("max_split_size")) {
    // -1 (or SIZE_MAX) means no limit.
    const int64_t bytes = split->AsInt().value_or(-1);
    if (bytes > 0 && bytes < (int64_t{1} << 62)) {
      entries.push_back(absl::StrFormat("max_split_size_mb:%d", bytes >> 20));
    }
  }
  if (std::optional<PickleValue> gc =
          settings.Find("garbage_collection_threshold")) {
    const double threshold = gc->AsFloat().value_or(0);
    recording.garbage_collection_threshold = std::max(0.0, threshold);
    if (threshold > 0) {
      entries.push_back(
          absl::StrFormat("garbage_collection_threshold:%g", threshold));
    }
  }
  if (std::optional<PickleValue> divisions =
          settings.Find("roundup_power2_divisions")) {
    if (std::optional<std::string> entry = RoundupEntry(*divisions)) {
      entries.push_back(*entry);
    }
  }
  if (std::optional<PickleValue> expandable =
          settings.Find("expandable_segments")) {
    recording.expandable_segments = expandable->AsBool().value_or(false);
    if (recording.expandable_segments)
      entries.push_back("expandable_segments:True");
  }
  recording.config = absl::StrJoin(entries, ",");
}

void FindInitialSegments(const std::vector<SnapshotSegment>& final,
                         StreamIndex& streams, PytorchRecording& recording) {
  if (recording.expandable_segments) return;
  std::map<uint64_t, RecordedSegment> present;
  for (const SnapshotSegment& segment : final) {
    present[segment.address] = {segment.address, segment.bytes,
                                streams.IndexOf(segment.stream), segment.small};
  }
  constexpr uint64_t kSmallSegment = 2 << 20;  // small-pool segments only
  for (auto it = recording.segments.rbegin(); it != recording.segments.rend();
       ++it) {
    if (it->kind == RecordedSegmentEvent::Kind::kAlloc) {
      present.erase(it->address);
    } else if (it->kind == RecordedSegmentEvent::Kind::kFree) {
      present[it->address] = {it->address, it->bytes, it->stream,
                              it->bytes == kSmallSegment};
    }
  }
  for (const auto& [address, segment] : present) {
    recording.initial_segments.push_back(segment);
  }
}

void CountReservedBytes(uint64_t final_reserved, PytorchRecording& recording) {
  // Walk back from the final state to what was reserved at the start.
  uint64_t reserved = final_reserved;
  for (auto it = recording.segments.rbegin(); it != recording.segments.rend();
       ++it) {
    reserved = it->Adds() ? reserved - std::min(reserved, it->bytes)
                          : reserved + it->bytes;
  }
  recording.reserved_at_start_bytes = reserved;
  uint64_t peak = reserved;
  recording.segments_added = 0;
  for (const RecordedSegmentEvent& event : recording.segments) {
    if (event.Adds()) {
      reserved += event.bytes;
      ++recording.segments_added;
    } else {
      reserved -= std::min(reserved, event.bytes);
    }
    peak = std::max(peak, reserved);
  }
  recording.peak_reserved_bytes = recording.segments.empty() ? 0 : peak;
}

}  // namespace tensormem::trace_internal
