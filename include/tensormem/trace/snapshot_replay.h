// Replaying a PyTorch memory snapshot the way its GPU ran it, and checking the
// `pytorch` policy against what PyTorch's caching allocator recorded.
//
// Each new segment is placed at the address the recording gives for it (best
// fit breaks ties by address, so the driver's addresses decide which of two
// equal blocks serves), the policy's configuration defaults to the snapshot's
// own `allocator_settings`, and a release the recording made between two
// events (empty_cache(), or the release before an out-of-memory error) is
// made at the same point. With `verify`, every event is compared with the
// recording: the segments obtained and returned, and the block's address.
//
//   TM_ASSIGN_OR_RETURN(PytorchImport read, ReadPytorchSnapshot("s.pickle"));
//   TM_ASSIGN_OR_RETURN(PreparedTrace trace,
//   PreparedTrace::Prepare(read.trace)); AllocatorSpec spec; spec.policy =
//   "pytorch"; TM_ASSIGN_OR_RETURN(SnapshotReplayResult result,
//       ReplaySnapshot(trace, read.recording, spec, {}, /*verify=*/true));
//   // result.comparison.divergences == 0: every event as recorded.
#ifndef TENSORMEM_TRACE_SNAPSHOT_REPLAY_H_
#define TENSORMEM_TRACE_SNAPSHOT_REPLAY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/trace/pytorch_recording.h"
#include "tensormem/trace/replay.h"

namespace tensormem {

struct SnapshotDivergence {
  int64_t event = -1;    // trace event index
  int64_t entry = -1;    // the device-trace entry (-1: a block live at start)
  std::string recorded;  // what the recording did at that event
  std::string model;     // what the replay did
  // The replay's blocks around the recorded address (or the replay's own),
  // one line each: address, size, in use or free.
  std::vector<std::string> around;
  // Bytes the replay released before the event minus those the recording
  // released (> 0: the replay released more).
  int64_t released_difference = 0;
  bool replay_failed = false;  // an allocation the recording served failed
};

// The device's capacity for the recording's allocator from trace event
// `event` on (what the other users of the device left it).
struct SnapshotCapacityStep {
  int64_t event = 0;
  uint64_t bytes = 0;

  bool operator==(const SnapshotCapacityStep&) const = default;
};

struct SnapshotComparison {
  std::string config;  // the policy configuration the replay used
  uint64_t recorded_peak_reserved_bytes = 0;
  int64_t recorded_segments = 0;  // segment_alloc / segment_map events
  int64_t replayed_segments = 0;  // regions the replay obtained
  int64_t releases_replayed = 0;  // empty_cache()-like releases made
  // Out-of-memory retries (num_alloc_retries): those the recording shows,
  // and the replay's.
  int64_t recorded_alloc_retries = 0;
  int64_t replayed_alloc_retries = 0;
  // The memory limit the replay ran under when none was given and the
  // recording depends on one (garbage_collection_threshold acts only under
  // a memory fraction; out-of-memory retries and failures happen at the
  // device's capacity): a limit under which the recording's releases and
  // failures are reproduced, found by bisection on the first divergence.
  // With memory_limit_steps, the largest step: the allocator's own limit.
  std::optional<uint64_t> memory_limit_inferred;
  // When no single limit reproduces the recording (the memory the device's
  // other users held changed between two out-of-memory retries): a capacity
  // that changes over the recording, in event order from event 0, with as
  // few steps as the bisection finds, each step's bytes reproducing the
  // events up to the next. Empty otherwise.
  std::vector<SnapshotCapacityStep> memory_limit_steps;
  bool verified = false;
  int64_t events_compared = 0;
  int64_t divergences = 0;  // events where the replay differed
  std::optional<SnapshotDivergence> first_divergence;
};

struct SnapshotReplayResult {
  ReplayResult replay;
  SnapshotComparison comparison;
  ReplayTarget target;  // the allocator, in its final state
};

// The configuration a snapshot replay gives the policy: `spec.config` when
// set, else the recording's settings (empty when it has none).
std::string SnapshotPolicyConfig(const PytorchRecording& recording,
                                 const AllocatorSpec& spec);

// Replays `trace` (the snapshot's events, as read with `recording`) into a
// BFC allocator built from `spec` whose regions lie at the recorded segment
// addresses. Without `spec.memory_limit`, a recording whose decisions
// depended on one (a garbage collection threshold, an out-of-memory retry or
// failure) is first replayed under candidate limits to infer the one it ran
// under (`memory_limit_inferred`). When none reproduces every event and the
// recording ran out of memory (no memory fraction), a capacity that steps
// over the recording (`memory_limit_steps`) if it diverges less, else the
// limit with the fewest divergences. Errors: a recording without
// segment events (nothing to place or compare), a spec that is not one BFC
// allocator, CreateAllocator's, or the replay's.
absl::StatusOr<SnapshotReplayResult> ReplaySnapshot(
    const PreparedTrace& trace, const PytorchRecording& recording,
    const AllocatorSpec& spec, const ReplayOptions& options, bool verify);

// config, recorded_peak_reserved_bytes, recorded_segments, segments,
// recorded_alloc_retries, alloc_retries, releases_replayed,
// memory_limit_inferred (or null), memory_limit_steps ([{event, bytes}],
// empty for one limit or none); with verification
// events_compared, divergences and first_divergence {event, entry, recorded,
// model, around}.
nlohmann::json SnapshotComparisonToJson(const SnapshotComparison& comparison);

}  // namespace tensormem

#endif  // TENSORMEM_TRACE_SNAPSHOT_REPLAY_H_
