#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/trace/importers.h"
#include "tensormem/trace/pickle.h"
#include "tensormem/trace/trace_io.h"
#include "trace/pytorch_recording.h"
#include "trace/pytorch_segments.h"
#include "trace/stream_index.h"

namespace tensormem {
namespace {

using Block = trace_internal::SnapshotBlock;

// One device-trace entry that becomes an event.
struct Entry {
  enum class Action {
    kAlloc,
    kFree,
    kOom,
    kSegment,
    kOther
  } action = Action::kOther;
  RecordedSegmentEvent::Kind segment = RecordedSegmentEvent::Kind::kAlloc;
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint64_t stream = 0;
  std::optional<int64_t> time_us;
  size_t index = 0;  // in the device's trace
};

class SnapshotReader {
 public:
  SnapshotReader(std::string_view source, int device)
      : source_(source), device_(device) {}

  absl::StatusOr<PytorchImport> Read(PickleValue root);

 private:
  absl::Status Error(std::string_view where, std::string_view what) const {
    return trace_internal::SnapshotError(source_, where, what);
  }
  absl::StatusOr<int64_t> IntField(PickleValue dict, std::string_view key,
                                   std::string_view where) const {
    return trace_internal::NonNegativeIntField(dict, key, where, source_);
  }
  // The entries of device_traces[device_] that become events.
  absl::Status ReadEntries(PickleValue traces, PytorchImport& result,
                           std::vector<Entry>& entries) const;
  // nullopt for an action that is not an allocation, a free or an OOM.
  absl::StatusOr<std::optional<Entry>> ReadEntry(
      PickleValue item, const std::string& where) const;
  // The events: first the blocks live before the first entry, then one per
  // entry.
  absl::Status AppendEvents(const std::map<uint64_t, Block>& before,
                            const std::vector<Entry>& entries,
                            trace_internal::StreamIndex& streams,
                            PytorchImport& result) const;
  // The trace event of an allocation, free or failed request.
  absl::Status ToEvent(const Entry& entry,
                       absl::flat_hash_map<uint64_t, uint64_t>& ids,
                       uint64_t& next_id, TraceEvent& event) const;
  // Nanoseconds of `entry` since the first timed entry (set on first use).
  absl::StatusOr<int64_t> TimeSinceFirst(
      size_t index, int64_t time_us,
      std::optional<int64_t>& first_time_us) const;

  std::string_view source_;
  int device_;
};

std::optional<RecordedSegmentEvent::Kind> SegmentKind(std::string_view name) {
  using Kind = RecordedSegmentEvent::Kind;
  if (name == "segment_alloc") return Kind::kAlloc;
  if (name == "segment_free") return Kind::kFree;
  if (name == "segment_map") return Kind::kMap;
  if (name == "segment_unmap") return Kind::kUnmap;
  return std::nullopt;
}

// The buffer keeps only the latest events: walk them backwards from the final
// state to find what was already live before the first one.
std::map<uint64_t, Block> LiveBeforeFirstEntry(
    const std::map<uint64_t, Block>& live, const std::vector<Entry>& entries) {
  std::map<uint64_t, Block> before = live;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (it->action == Entry::Action::kAlloc) before.erase(it->address);
    if (it->action == Entry::Action::kFree) {
      before[it->address] = {it->bytes, it->stream};
    }
  }
  return before;
}

absl::StatusOr<PytorchImport> SnapshotReader::Read(PickleValue root) {
  PytorchImport result;
  std::optional<PickleValue> segments;
  std::optional<PickleValue> traces;
  if (root.kind() == PickleValue::Kind::kList) {
    segments = root;  // the legacy form: segments only
  } else if (root.kind() == PickleValue::Kind::kDict) {
    segments = root.Find("segments");
    traces = root.Find("device_traces");
  }
  if (!segments) {
    return Error("top level", "not a PyTorch memory snapshot (no 'segments')");
  }
  absl::StatusOr<trace_internal::FinalSegments> final =
      trace_internal::ReadFinalSegments(*segments, device_, source_);
  if (!final.ok()) return final.status();
  if (root.kind() == PickleValue::Kind::kDict) {
    if (std::optional<PickleValue> settings = root.Find("allocator_settings"))
      trace_internal::ReadAllocatorSettings(*settings, result.recording);
  }
  std::vector<Entry> entries;
  if (traces) {
    if (absl::Status status = ReadEntries(*traces, result, entries);
        !status.ok()) {
      return status;
    }
  }
  const std::map<uint64_t, Block> before =
      LiveBeforeFirstEntry(final->live, entries);
  trace_internal::StreamIndex streams;
  if (absl::Status status = AppendEvents(before, entries, streams, result);
      !status.ok()) {
    return status;
  }
  trace_internal::FindInitialSegments(final->segments, streams,
                                      result.recording);
  trace_internal::CountReservedBytes(final->reserved, result.recording);
  return result;
}

absl::Status SnapshotReader::ReadEntries(PickleValue traces,
                                         PytorchImport& result,
                                         std::vector<Entry>& entries) const {
  if (traces.kind() != PickleValue::Kind::kList) {
    return Error("device_traces", "is not a list");
  }
  result.devices = traces.size();
  if (device_ < 0 || static_cast<size_t>(device_) >= traces.size()) {
    return Error(
        "device_traces",
        absl::StrFormat("no device %d (the snapshot has traces for %d devices)",
                        device_, traces.size()));
  }
  const PickleValue device_trace = traces[device_];
  if (device_trace.kind() != PickleValue::Kind::kList) {
    return Error(absl::StrFormat("device_traces[%d]", device_),
                 "is not a list");
  }
  for (size_t i = 0; i < device_trace.size(); ++i) {
    absl::StatusOr<std::optional<Entry>> entry = ReadEntry(
        device_trace[i], absl::StrFormat("device_traces[%d][%d]", device_, i));
    if (!entry.ok()) return entry.status();
    if (!entry->has_value() || (*entry)->action == Entry::Action::kSegment) {
      ++result.entries_skipped;  // segment events become no trace event
    }
    if (entry->has_value()) {
      (*entry)->index = i;
      entries.push_back(**entry);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Entry>> SnapshotReader::ReadEntry(
    PickleValue item, const std::string& where) const {
  std::optional<PickleValue> action = item.Find("action");
  std::optional<std::string_view> name =
      action ? action->AsString() : std::nullopt;
  if (!name) return Error(where, "has no 'action' string");
  Entry entry;
  if (*name == "alloc") entry.action = Entry::Action::kAlloc;
  if (*name == "free_completed") entry.action = Entry::Action::kFree;
  if (*name == "oom") entry.action = Entry::Action::kOom;
  if (std::optional<RecordedSegmentEvent::Kind> kind = SegmentKind(*name)) {
    entry.action = Entry::Action::kSegment;
    entry.segment = *kind;
  }
  if (entry.action == Entry::Action::kOther) return std::nullopt;
  if (entry.action != Entry::Action::kOom) {
    absl::StatusOr<int64_t> address = IntField(item, "addr", where);
    if (!address.ok()) return address.status();
    entry.address = *address;
  }
  absl::StatusOr<int64_t> size = IntField(item, "size", where);
  if (!size.ok()) return size.status();
  entry.bytes = *size;
  if (std::optional<PickleValue> stream = item.Find("stream")) {
    entry.stream = static_cast<uint64_t>(stream->AsInt().value_or(0));
  }
  if (std::optional<PickleValue> time = item.Find("time_us")) {
    entry.time_us = time->AsInt();
  }
  return entry;
}

absl::StatusOr<int64_t> SnapshotReader::TimeSinceFirst(
    size_t index, int64_t time_us,
    std::optional<int64_t>& first_time_us) const {
  if (!first_time_us) first_time_us = time_us;
  // Times that far apart (or a difference beyond int64) are not a real
  // recording.
  int64_t since_first_us = 0, since_first_ns = 0;
  if (__builtin_sub_overflow(time_us, *first_time_us, &since_first_us) ||
      __builtin_mul_overflow(since_first_us, 1000, &since_first_ns)) {
    return Error(absl::StrFormat("device trace entry %d", index),
                 absl::StrFormat("time_us %d is out of range (first %d)",
                                 time_us, *first_time_us));
  }
  return std::max<int64_t>(0, since_first_ns);
}

absl::Status SnapshotReader::AppendEvents(
    const std::map<uint64_t, Block>& before, const std::vector<Entry>& entries,
    trace_internal::StreamIndex& streams, PytorchImport& result) const {
  absl::flat_hash_map<uint64_t, uint64_t> ids;  // address -> id of live block
  uint64_t next_id = 0;
  PytorchRecording& recording = result.recording;
  for (const auto& [address, block] : before) {
    TraceEvent event = TraceEvent::Alloc(next_id, block.bytes);
    event.stream = streams.IndexOf(block.stream);
    ids[address] = next_id++;
    result.trace.events.push_back(event);
    recording.addresses.push_back(address);
    recording.entries.push_back(-1);
  }
  result.blocks_live_at_start = before.size();

  std::optional<int64_t> first_time_us;
  for (const Entry& entry : entries) {
    TraceEvent event;
    event.stream = streams.IndexOf(entry.stream);
    if (entry.action == Entry::Action::kSegment) {
      recording.segments.push_back({entry.segment, event.stream, entry.address,
                                    entry.bytes, entry.index,
                                    result.trace.events.size()});
      continue;
    }
    if (entry.time_us) {
      absl::StatusOr<int64_t> time_ns =
          TimeSinceFirst(entry.index, *entry.time_us, first_time_us);
      if (!time_ns.ok()) return time_ns.status();
      event.time_ns = *time_ns;
    }
    TM_RETURN_IF_ERROR(ToEvent(entry, ids, next_id, event));
    result.trace.events.push_back(event);
    recording.addresses.push_back(
        entry.action == Entry::Action::kAlloc ? entry.address : 0);
    recording.entries.push_back(static_cast<int64_t>(entry.index));
  }
  return absl::OkStatus();
}

absl::Status SnapshotReader::ToEvent(
    const Entry& entry, absl::flat_hash_map<uint64_t, uint64_t>& ids,
    uint64_t& next_id, TraceEvent& event) const {
  const std::string where =
      absl::StrFormat("device trace entry %d", entry.index);
  if (entry.action == Entry::Action::kFree) {
    auto it = ids.find(entry.address);
    if (it == ids.end()) {
      return Error(where, absl::StrFormat("free_completed of address 0x%x, "
                                          "which is not allocated",
                                          entry.address));
    }
    event.op = TraceOp::kFree;
    event.id = it->second;
    ids.erase(it);
    return absl::OkStatus();
  }
  event.op = TraceOp::kAlloc;
  event.id = next_id++;
  event.bytes = entry.bytes;
  event.failed = entry.action == Entry::Action::kOom;
  if (!event.failed && !ids.try_emplace(entry.address, event.id).second) {
    return Error(where, absl::StrFormat("alloc at address 0x%x, which is "
                                        "already allocated",
                                        entry.address));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PytorchImport> ParsePytorchSnapshot(
    std::string bytes, std::string_view source,
    const PytorchSnapshotOptions& options) {
  absl::StatusOr<PickleDocument> document =
      PickleDocument::Parse(std::move(bytes), source);
  if (!document.ok()) return document.status();
  return SnapshotReader(source, options.device).Read(document->root());
}

absl::StatusOr<PytorchImport> ReadPytorchSnapshot(
    const std::string& path, const PytorchSnapshotOptions& options) {
  absl::StatusOr<std::string> bytes = ReadWholeFileInflated(path);
  if (!bytes.ok()) return bytes.status();
  return ParsePytorchSnapshot(*std::move(bytes), path, options);
}

}  // namespace tensormem
