// Internal to the snapshot replay: the memory limit a recording ran under,
// when its decisions depended on one and the snapshot does not say it.
#ifndef TENSORMEM_SRC_TRACE_SNAPSHOT_LIMIT_H_
#define TENSORMEM_SRC_TRACE_SNAPSHOT_LIMIT_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/trace/snapshot_replay.h"

namespace tensormem::trace_internal {

// ReplaySnapshot under `spec` as given (no limit inferred), the device's
// capacity following `capacity` when given (see
// RecordedSegmentUpstream::SetCapacity; spec.memory_limit should be at least
// its largest step, or it binds first).
absl::StatusOr<SnapshotReplayResult> ReplayUnderLimit(
    const PreparedTrace& trace, const PytorchRecording& recording,
    const AllocatorSpec& spec, const ReplayOptions& options, bool verify,
    std::span<const SnapshotCapacityStep> capacity = {});

// Whether a limit shaped the recording: a garbage collection threshold
// (active only under a memory fraction), a request that failed, or segments
// released to make room for one (an out-of-memory retry).
bool DependsOnLimit(const PreparedTrace& trace,
                    const PytorchRecording& recording);

// Out-of-memory retries the recording shows: a request for which segments
// were released before one was added (without garbage collection, which
// releases that way too), and each failed request (PyTorch retries once
// before it gives up).
int64_t RecordedRetries(const PreparedTrace& trace,
                        const PytorchRecording& recording);

// Whether the capacity may have changed during the recording: it ran out of
// memory, and not under a memory fraction (which the program sets once).
bool CapacityMayChange(const PreparedTrace& trace,
                       const PytorchRecording& recording);

struct InferredLimit {
  uint64_t limit = 0;
  int64_t divergences = 0;  // of the replay under it
};

// A limit under which the replay reproduces the recording's releases and
// failures, found by bisection: at the first divergence, a replay that
// released (or failed) where the recording did not had too little memory,
// one that did not release where the recording did had too much. When no
// limit reproduces every event, the one tried with the fewest divergences
// (nullopt if none was tried). Errors: the replays'.
absl::StatusOr<std::optional<InferredLimit>> InferMemoryLimit(
    const PreparedTrace& trace, const PytorchRecording& recording,
    const AllocatorSpec& spec);

struct InferredCapacity {
  std::vector<SnapshotCapacityStep> steps;  // from event 0, in event order
  int64_t divergences = 0;                  // of the replay under them
};

// A capacity that steps over the recording, for one that no single limit
// reproduces, built greedily: each step's bytes are bisected as
// InferMemoryLimit's limit, on the first divergence from the step's event
// on, and kept at the value that takes the replay furthest; the next step
// begins at the first divergence left. It stops when every event is
// reproduced, when a step makes no progress (a divergence no capacity
// explains; that step is dropped), or at one step more than the recording's
// retries and failures (each later step must hold one of them). Errors: the
// replays'.
absl::StatusOr<InferredCapacity> InferCapacitySteps(
    const PreparedTrace& trace, const PytorchRecording& recording,
    const AllocatorSpec& spec);

// The largest step's bytes (0 for none).
uint64_t LargestStep(std::span<const SnapshotCapacityStep> steps);

}  // namespace tensormem::trace_internal

#endif  // TENSORMEM_SRC_TRACE_SNAPSHOT_LIMIT_H_
