// Internal to the snapshot replay: the memory limit a recording ran under,
// when its decisions depended on one and the snapshot does not say it.
#ifndef TENSORMEM_SRC_TRACE_SNAPSHOT_LIMIT_H_
#define TENSORMEM_SRC_TRACE_SNAPSHOT_LIMIT_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "tensormem/trace/snapshot_replay.h"

namespace tensormem::trace_internal {

// ReplaySnapshot under `spec` as given (no limit inferred).
absl::StatusOr<SnapshotReplayResult> ReplayUnderLimit(
    const PreparedTrace& trace, const PytorchRecording& recording,
    const AllocatorSpec& spec, const ReplayOptions& options, bool verify);

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

// A limit under which the replay reproduces the recording's releases and
// failures, found by bisection: at the first divergence, a replay that
// released (or failed) where the recording did not had too little memory,
// one that did not release where the recording did had too much. When no
// limit reproduces every event, the one tried with the fewest divergences
// (nullopt if none was tried). Errors: the replays'.
absl::StatusOr<std::optional<uint64_t>> InferMemoryLimit(
    const PreparedTrace& trace, const PytorchRecording& recording,
    const AllocatorSpec& spec);

}  // namespace tensormem::trace_internal

#endif  // TENSORMEM_SRC_TRACE_SNAPSHOT_LIMIT_H_
