#include "trace/snapshot_limit.h"

#include <algorithm>
#include <cstdint>

#include "tensormem/core/checked_math.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/core/units.h"

namespace tensormem::trace_internal {
namespace {

// Segments released before one is added, for the same event: a request
// that could not get memory until the cache was emptied.
bool RetriedAfterRelease(const PytorchRecording& recording) {
  const auto& segments = recording.segments;
  for (size_t i = 1; i < segments.size(); ++i) {
    if (segments[i].Adds() && !segments[i - 1].Adds() &&
        segments[i - 1].before_event == segments[i].before_event) {
      return true;
    }
  }
  return false;
}

bool RecordedFailure(const PreparedTrace& trace) {
  return std::any_of(trace.steps().begin(), trace.steps().end(),
                     [](const PreparedTrace::Step& step) {
                       return step.op == PreparedTrace::Op::kRecordedFailure;
                     });
}

// Releases before a new segment are garbage collection when the recording
// collects, out-of-memory retries otherwise.
bool RanOutOfMemory(const PreparedTrace& trace,
                    const PytorchRecording& recording) {
  return RecordedFailure(trace) ||
         (recording.garbage_collection_threshold <= 0 &&
          RetriedAfterRelease(recording));
}

// Where the bisection starts: never below what was reserved. Running out of
// memory bounds the limit by what was reserved plus the largest segment a
// request makes; a collection (reserved above threshold x limit) by the
// peak over the threshold.
std::pair<uint64_t, uint64_t> LimitBounds(const PreparedTrace& trace,
                                          const PytorchRecording& recording) {
  const uint64_t low = recording.peak_reserved_bytes;
  uint64_t high = low;
  if (RanOutOfMemory(trace, recording)) {
    uint64_t largest = 0;
    for (const PreparedTrace::Step& step : trace.steps())
      largest = std::max(largest, step.bytes);
    high = low + RoundUp(largest, 2 * kMiB) + 20 * kMiB;
  }
  if (const double threshold = recording.garbage_collection_threshold;
      threshold > 0) {
    const double bound = static_cast<double>(low) / threshold;
    high = std::max(high, static_cast<uint64_t>(bound) + 1);
  }
  return {low, high};
}

}  // namespace

int64_t RecordedRetries(const PreparedTrace& trace,
                        const PytorchRecording& recording) {
  int64_t retries = std::count_if(
      trace.steps().begin(), trace.steps().end(), [](const auto& step) {
        return step.op == PreparedTrace::Op::kRecordedFailure;
      });
  if (recording.garbage_collection_threshold > 0) return retries;
  const auto& segments = recording.segments;
  for (size_t i = 1; i < segments.size(); ++i) {
    // The first segment added after a release, for one request.
    retries += segments[i].Adds() && !segments[i - 1].Adds() &&
               segments[i - 1].before_event == segments[i].before_event;
  }
  return retries;
}

bool DependsOnLimit(const PreparedTrace& trace,
                    const PytorchRecording& recording) {
  return recording.garbage_collection_threshold > 0 || RecordedFailure(trace) ||
         RetriedAfterRelease(recording);
}

absl::StatusOr<std::optional<uint64_t>> InferMemoryLimit(
    const PreparedTrace& trace, const PytorchRecording& recording,
    const AllocatorSpec& spec) {
  auto [low, high] = LimitBounds(trace, recording);
  AllocatorSpec limited = spec;
  // The limit with the fewest divergences, should none reproduce every
  // event (the memory other users of the device held may have varied).
  std::optional<uint64_t> best;
  int64_t fewest = INT64_MAX;
  while (low <= high) {
    const uint64_t limit = low + (high - low) / 2;
    limited.memory_limit = limit;
    TM_ASSIGN_OR_RETURN(SnapshotReplayResult tried,
                        ReplayUnderLimit(trace, recording, limited, {}, true));
    const SnapshotComparison& comparison = tried.comparison;
    if (comparison.divergences < fewest) {
      fewest = comparison.divergences;
      best = limit;
    }
    const std::optional<SnapshotDivergence>& first =
        comparison.first_divergence;
    if (!first) return limit;
    if (first->released_difference > 0 || first->replay_failed) {
      low = limit + 1;
    } else if (first->released_difference < 0) {
      high = limit - 1;
    } else {
      break;  // a divergence no limit explains
    }
  }
  return best;
}

}  // namespace tensormem::trace_internal
