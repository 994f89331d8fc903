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

// Which way the limit must move to fix the first divergence: +1 (the replay
// released or failed where the recording did not: too little memory), -1
// (it did not release where the recording did: too much), 0 (a divergence
// no limit explains).
int Direction(const SnapshotDivergence& first) {
  if (first.released_difference > 0 || first.replay_failed) return 1;
  return first.released_difference < 0 ? -1 : 0;
}

// Bytes the recording held before event `event`'s segment events: a lower
// bound of the capacity from then on.
uint64_t ReservedBefore(const PytorchRecording& recording, size_t event) {
  auto held = static_cast<int64_t>(recording.reserved_at_start_bytes);
  for (const RecordedSegmentEvent& segment : recording.segments) {
    if (segment.before_event >= event) break;
    const auto bytes = static_cast<int64_t>(segment.bytes);
    held += segment.Adds() ? bytes : -bytes;
  }
  return static_cast<uint64_t>(std::max<int64_t>(held, 0));
}

// How far a replay went: the event of its first divergence (kReachedEnd for
// none), its divergences, and the bytes of the step tried.
constexpr int64_t kReachedEnd = INT64_MAX;
struct Reach {
  int64_t event = -1;
  int64_t divergences = INT64_MAX;
  uint64_t bytes = 0;

  bool FurtherThan(const Reach& other) const {
    return event > other.event ||
           (event == other.event && divergences < other.divergences);
  }
};

absl::StatusOr<Reach> TrySteps(const PreparedTrace& trace,
                               const PytorchRecording& recording,
                               const AllocatorSpec& spec,
                               std::span<const SnapshotCapacityStep> steps,
                               SnapshotDivergence* first) {
  AllocatorSpec limited = spec;
  limited.memory_limit = LargestStep(steps);
  TM_ASSIGN_OR_RETURN(
      SnapshotReplayResult tried,
      ReplayUnderLimit(trace, recording, limited, {}, true, steps));
  const SnapshotComparison& comparison = tried.comparison;
  if (comparison.first_divergence) *first = *comparison.first_divergence;
  return Reach{comparison.first_divergence ? first->event : kReachedEnd,
               comparison.divergences, steps.back().bytes};
}

// The last step's bytes, bisected in [low, high] on the first divergence
// (the earlier steps reproduce every event before the last one's), left at
// the value that took the replay furthest.
absl::StatusOr<Reach> BisectStep(const PreparedTrace& trace,
                                 const PytorchRecording& recording,
                                 const AllocatorSpec& spec,
                                 std::vector<SnapshotCapacityStep>& steps,
                                 uint64_t low, uint64_t high) {
  Reach best;
  while (low <= high) {
    steps.back().bytes = low + (high - low) / 2;
    SnapshotDivergence first;
    TM_ASSIGN_OR_RETURN(const Reach reach,
                        TrySteps(trace, recording, spec, steps, &first));
    if (reach.FurtherThan(best)) best = reach;
    const int direction = reach.event == kReachedEnd ? 0 : Direction(first);
    if (direction == 0 || (direction < 0 && reach.bytes == 0)) break;
    if (direction > 0) {
      low = reach.bytes + 1;
    } else {
      high = reach.bytes - 1;
    }
  }
  steps.back().bytes = best.bytes;
  return best;
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

bool CapacityMayChange(const PreparedTrace& trace,
                       const PytorchRecording& recording) {
  return recording.garbage_collection_threshold <= 0 &&
         RanOutOfMemory(trace, recording);
}

absl::StatusOr<std::optional<InferredLimit>> InferMemoryLimit(
    const PreparedTrace& trace, const PytorchRecording& recording,
    const AllocatorSpec& spec) {
  auto [low, high] = LimitBounds(trace, recording);
  AllocatorSpec limited = spec;
  // The limit with the fewest divergences, should none reproduce every
  // event (the memory other users of the device held may have varied).
  std::optional<InferredLimit> best;
  while (low <= high) {
    const uint64_t limit = low + (high - low) / 2;
    limited.memory_limit = limit;
    TM_ASSIGN_OR_RETURN(SnapshotReplayResult tried,
                        ReplayUnderLimit(trace, recording, limited, {}, true));
    const SnapshotComparison& comparison = tried.comparison;
    if (!best || comparison.divergences < best->divergences)
      best = InferredLimit{limit, comparison.divergences};
    if (!comparison.first_divergence) break;
    const int direction = Direction(*comparison.first_divergence);
    if (direction == 0) break;
    if (direction > 0) {
      low = limit + 1;
    } else {
      high = limit - 1;
    }
  }
  return best;
}

absl::StatusOr<InferredCapacity> InferCapacitySteps(
    const PreparedTrace& trace, const PytorchRecording& recording,
    const AllocatorSpec& spec) {
  const uint64_t high = LimitBounds(trace, recording).second;
  const size_t most_steps =
      static_cast<size_t>(RecordedRetries(trace, recording)) + 1;
  InferredCapacity inferred;
  std::vector<SnapshotCapacityStep>& steps = inferred.steps;
  int64_t start = 0;
  while (steps.size() < most_steps) {
    steps.push_back(SnapshotCapacityStep{start, 0});
    TM_ASSIGN_OR_RETURN(
        const Reach reach,
        BisectStep(trace, recording, spec, steps,
                   ReservedBefore(recording, static_cast<size_t>(start)),
                   high));
    if (steps.size() > 1 && reach.event <= start) {
      steps.pop_back();  // no progress: the previous steps went as far
      break;
    }
    inferred.divergences = reach.divergences;
    if (reach.event == kReachedEnd || reach.event <= start) break;
    start = reach.event;
  }
  return inferred;
}

uint64_t LargestStep(std::span<const SnapshotCapacityStep> steps) {
  uint64_t largest = 0;
  for (const SnapshotCapacityStep& step : steps)
    largest = std::max(largest, step.bytes);
  return largest;
}

}  // namespace tensormem::trace_internal
