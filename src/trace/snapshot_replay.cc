#include "tensormem/trace/snapshot_replay.h"

#include <algorithm>
#include <memory>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tensormem/core/status_macros.h"
#include "trace/recorded_segments.h"
#include "trace/snapshot_limit.h"
#include "trace/warm_start.h"

namespace tensormem {
namespace {

using trace_internal::RecordedSegmentUpstream;
using Kind = RecordedSegmentEvent::Kind;

std::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kAlloc:
      return "segment_alloc";
    case Kind::kFree:
      return "segment_free";
    case Kind::kMap:
      return "segment_map";
    case Kind::kUnmap:
      return "segment_unmap";
  }
  return "segment";
}

// The event and the segments around it, e.g. "alloc of 4096 B at 0x7f00
// after segment_alloc 0x7f00 (2097152 B)".
std::string Describe(const PreparedTrace::Step& step, uint64_t address,
                     std::span<const RecordedSegmentEvent> segments) {
  std::string text;
  switch (step.op) {
    case PreparedTrace::Op::kAlloc:
      text = address == 0 ? absl::StrFormat("alloc of %d B failed", step.bytes)
                          : absl::StrFormat("alloc of %d B at 0x%x", step.bytes,
                                            address);
      break;
    case PreparedTrace::Op::kFree:
      text = "free";
      break;
    case PreparedTrace::Op::kRecordedFailure:
      text = absl::StrFormat("out of memory for %d B", step.bytes);
      break;
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    absl::StrAppend(&text, i == 0 ? " after " : ", ",
                    absl::StrFormat("%s 0x%x (%d B)",
                                    std::string(KindName(segments[i].kind)),
                                    segments[i].address, segments[i].bytes));
  }
  return text;
}

// Whether two lists of segment events did the same: the same segments added
// and released, in order (a map counts as an alloc, an unmap as a free).
bool SameSegments(std::span<const RecordedSegmentEvent> recorded,
                  std::span<const RecordedSegmentEvent> replayed) {
  return std::equal(recorded.begin(), recorded.end(), replayed.begin(),
                    replayed.end(), [](const auto& a, const auto& b) {
                      return a.Adds() == b.Adds() && a.address == b.address &&
                             a.bytes == b.bytes;
                    });
}

int64_t ReleasedBytes(std::span<const RecordedSegmentEvent> segments) {
  int64_t bytes = 0;
  for (const RecordedSegmentEvent& segment : segments) {
    if (!segment.Adds()) bytes += static_cast<int64_t>(segment.bytes);
  }
  return bytes;
}

// Up to two chunks on either side of `address` in the region holding it.
std::vector<std::string> BlocksAround(const MemoryDump& dump,
                                      uint64_t address) {
  constexpr ptrdiff_t kSide = 2;
  std::vector<std::string> lines;
  for (const MemoryDump::Region& region : dump.regions) {
    if (address < region.address || address >= region.address + region.size)
      continue;
    const auto& chunks = region.chunks;
    const auto at = std::find_if(chunks.begin(), chunks.end(), [&](auto& c) {
      return address < c.address + c.size;
    });
    const ptrdiff_t index = at - chunks.begin();
    const ptrdiff_t first = std::max<ptrdiff_t>(0, index - kSide);
    const ptrdiff_t last =
        std::min<ptrdiff_t>(chunks.size(), index + kSide + 1);
    for (ptrdiff_t i = first; i < last; ++i) {
      const MemoryDump::Chunk& chunk = chunks[i];
      lines.push_back(absl::StrFormat(
          "0x%x %d B %s", chunk.address, chunk.size,
          chunk.in_use
              ? absl::StrFormat("in use (%d requested)", chunk.requested_size)
              : std::string("free")));
    }
  }
  return lines;
}

// Follows the replay event by event: makes the recording's releases, counts
// segments and, when verifying, compares each event with the recording.
class SnapshotObserver final : public ReplayObserver {
 public:
  SnapshotObserver(const PreparedTrace& trace,
                   const PytorchRecording& recording,
                   RecordedSegmentUpstream& upstream, BfcAllocator& bfc,
                   bool verify, SnapshotComparison& comparison)
      : trace_(trace),
        recording_(recording),
        upstream_(upstream),
        bfc_(bfc),
        verify_(verify),
        comparison_(comparison) {}

  void BeforeEvent(size_t event) override {
    recorded_ = RecordedBefore(event);
    upstream_.BeginEvent(event);
    // Releases with no new segment after them: empty_cache(), or the
    // release before an out-of-memory error. The replay makes them too.
    if (!recorded_.empty() &&
        std::none_of(recorded_.begin(), recorded_.end(),
                     [](const auto& s) { return s.Adds(); })) {
      bfc_.ReleaseFreeRegions();
      ++comparison_.releases_replayed;
    }
  }

  void AfterEvent(size_t event, const void* block) override {
    const std::vector<RecordedSegmentEvent> replayed = upstream_.TakeLog();
    comparison_.replayed_segments += std::count_if(
        replayed.begin(), replayed.end(), [](auto& s) { return s.Adds(); });
    if (!verify_) return;
    ++comparison_.events_compared;
    const uint64_t address = reinterpret_cast<uint64_t>(block);
    const uint64_t recorded_address = recording_.addresses[event];
    if (SameSegments(recorded_, replayed) && address == recorded_address)
      return;
    ++comparison_.divergences;
    if (comparison_.first_divergence) return;
    const PreparedTrace::Step& step = trace_.steps()[event];
    comparison_.first_divergence = SnapshotDivergence{
        static_cast<int64_t>(event),
        recording_.entries[event],
        Describe(step, recorded_address, recorded_),
        Describe(step, address, replayed),
        BlocksAround(bfc_.RecordMemoryDump(),
                     recorded_address != 0 ? recorded_address : address),
        ReleasedBytes(replayed) - ReleasedBytes(recorded_),
        address == 0 && recorded_address != 0};
  }

 private:
  // The recorded segment events that came before trace event `event`.
  std::span<const RecordedSegmentEvent> RecordedBefore(size_t event) {
    const std::vector<RecordedSegmentEvent>& all = recording_.segments;
    while (cursor_ < all.size() && all[cursor_].before_event < event) ++cursor_;
    size_t end = cursor_;
    while (end < all.size() && all[end].before_event == event) ++end;
    return std::span(all).subspan(cursor_, end - cursor_);
  }

  const PreparedTrace& trace_;
  const PytorchRecording& recording_;
  RecordedSegmentUpstream& upstream_;
  BfcAllocator& bfc_;
  const bool verify_;
  SnapshotComparison& comparison_;
  size_t cursor_ = 0;
  std::span<const RecordedSegmentEvent> recorded_;
};

}  // namespace

namespace trace_internal {

absl::StatusOr<SnapshotReplayResult> ReplayUnderLimit(
    const PreparedTrace& trace, const PytorchRecording& recording,
    const AllocatorSpec& spec, const ReplayOptions& options, bool verify,
    std::span<const SnapshotCapacityStep> capacity) {
  if (!recording.has_segment_events()) {
    return absl::InvalidArgumentError(
        "the snapshot records no segment events (segment_alloc, "
        "segment_map, ...): there is nothing to place segments by or to "
        "compare with");
  }
  if (recording.addresses.size() != trace.steps().size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the recording has %d events and the trace %d: not read together",
        recording.addresses.size(), trace.steps().size()));
  }
  AllocatorSpec built_spec = spec;
  built_spec.config = SnapshotPolicyConfig(recording, spec);
  auto owned_upstream = std::make_unique<RecordedSegmentUpstream>(recording);
  RecordedSegmentUpstream& upstream = *owned_upstream;
  upstream.SetCapacity({capacity.begin(), capacity.end()});
  BfcAllocatorOptions bfc_options;
  bfc_options.allow_retry_on_failure = false;
  bfc_options.log_failures = false;
  TM_ASSIGN_OR_RETURN(BuiltAllocator built,
                      CreateAllocatorOver(built_spec, std::move(owned_upstream),
                                          std::move(bfc_options)));
  SnapshotReplayResult result;
  BfcAllocator* bfc = built.bfc;
  result.target.base = nullptr;
  result.target.explain_failure = [bfc] { return bfc->LastFailureReport(); };
  result.target.dump = [bfc] { return bfc->RecordMemoryDump(); };
  result.target.allocator = std::move(built.allocator);
  if (!recording.initial_segments.empty()) {
    TM_ASSIGN_OR_RETURN(
        std::vector<void*> placed,
        trace_internal::RebuildInitialState(*bfc, upstream, recording, trace));
    upstream.TakeLog();  // segments that existed before: no events
    result.target.wrapped.push_back(std::move(result.target.allocator));
    result.target.allocator =
        std::make_unique<trace_internal::PrePlacedAllocator>(*bfc,
                                                             std::move(placed));
  }

  SnapshotComparison& comparison = result.comparison;
  comparison.config = built_spec.config;
  comparison.recorded_peak_reserved_bytes = recording.peak_reserved_bytes;
  comparison.recorded_segments = recording.segments_added;
  comparison.verified = verify;
  SnapshotObserver observer(trace, recording, upstream, *bfc, verify,
                            comparison);
  ReplayOptions with_observer = options;
  with_observer.observer = &observer;
  TM_ASSIGN_OR_RETURN(result.replay,
                      Replay(trace, result.target, with_observer));
  comparison.recorded_alloc_retries = RecordedRetries(trace, recording);
  comparison.replayed_alloc_retries = bfc->GetStats()->num_alloc_retries;
  return result;
}

}  // namespace trace_internal

std::string SnapshotPolicyConfig(const PytorchRecording& recording,
                                 const AllocatorSpec& spec) {
  if (!spec.config.empty()) return spec.config;
  return recording.config.value_or("");
}

namespace {

// A capacity that steps, where no single limit reproduces a recording that
// may have seen it change, if it diverges less than `limit`; else none.
absl::StatusOr<std::vector<SnapshotCapacityStep>> StepsWhereNoLimitFits(
    const PreparedTrace& trace, const PytorchRecording& recording,
    const AllocatorSpec& spec, const trace_internal::InferredLimit& limit) {
  if (limit.divergences == 0 ||
      !trace_internal::CapacityMayChange(trace, recording)) {
    return std::vector<SnapshotCapacityStep>();
  }
  TM_ASSIGN_OR_RETURN(
      trace_internal::InferredCapacity capacity,
      trace_internal::InferCapacitySteps(trace, recording, spec));
  if (capacity.steps.size() < 2 || capacity.divergences >= limit.divergences)
    capacity.steps.clear();
  return std::move(capacity.steps);
}

}  // namespace

absl::StatusOr<SnapshotReplayResult> ReplaySnapshot(
    const PreparedTrace& trace, const PytorchRecording& recording,
    const AllocatorSpec& spec, const ReplayOptions& options, bool verify) {
  using trace_internal::ReplayUnderLimit;
  // Only the recording's own settings say what a limit would change.
  if (spec.memory_limit ||
      SnapshotPolicyConfig(recording, spec) != recording.config ||
      !trace_internal::DependsOnLimit(trace, recording)) {
    return ReplayUnderLimit(trace, recording, spec, options, verify);
  }
  TM_ASSIGN_OR_RETURN(const std::optional<trace_internal::InferredLimit> limit,
                      trace_internal::InferMemoryLimit(trace, recording, spec));
  if (!limit) return ReplayUnderLimit(trace, recording, spec, options, verify);
  TM_ASSIGN_OR_RETURN(std::vector<SnapshotCapacityStep> steps,
                      StepsWhereNoLimitFits(trace, recording, spec, *limit));
  AllocatorSpec limited = spec;
  limited.memory_limit =
      steps.empty() ? limit->limit : trace_internal::LargestStep(steps);
  TM_ASSIGN_OR_RETURN(
      SnapshotReplayResult result,
      ReplayUnderLimit(trace, recording, limited, options, verify, steps));
  result.comparison.memory_limit_inferred = limited.memory_limit;
  result.comparison.memory_limit_steps = std::move(steps);
  return result;
}

nlohmann::json SnapshotComparisonToJson(const SnapshotComparison& comparison) {
  nlohmann::json json = {
      {"config", comparison.config},
      {"recorded_peak_reserved_bytes", comparison.recorded_peak_reserved_bytes},
      {"recorded_segments", comparison.recorded_segments},
      {"segments", comparison.replayed_segments},
      {"recorded_alloc_retries", comparison.recorded_alloc_retries},
      {"alloc_retries", comparison.replayed_alloc_retries},
      {"releases_replayed", comparison.releases_replayed},
      {"memory_limit_inferred",
       comparison.memory_limit_inferred
           ? nlohmann::json(*comparison.memory_limit_inferred)
           : nlohmann::json()}};
  json["memory_limit_steps"] = nlohmann::json::array();
  for (const SnapshotCapacityStep& step : comparison.memory_limit_steps) {
    json["memory_limit_steps"].push_back(
        {{"event", step.event}, {"bytes", step.bytes}});
  }
  if (!comparison.verified) return json;
  json["events_compared"] = comparison.events_compared;
  json["divergences"] = comparison.divergences;
  if (const auto& first = comparison.first_divergence) {
    json["first_divergence"] = {{"event", first->event},
                                {"entry", first->entry},
                                {"recorded", first->recorded},
                                {"model", first->model},
                                {"around", first->around}};
  } else {
    json["first_divergence"] = nullptr;
  }
  return json;
}

}  // namespace tensormem
