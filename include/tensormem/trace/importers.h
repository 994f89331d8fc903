// Importers: traces from the formats users already have, and conversions
// between traces and buffer sets (docs/traces.md).
//
// - RMM logging CSV (`Thread,Time,Action,Pointer,Size,Stream`), as written by
//   RMM's logging_resource_adaptor;
// - PyTorch memory snapshots (`torch.cuda.memory._dump_snapshot` pickles);
// - buffer sets (docs/design.md §3.2) in both directions, so the offline
//   planners and the online allocators can be compared on one workload.
//
//   absl::StatusOr<Trace> trace = ReadRmmLog("rmm_log.csv");
//   absl::StatusOr<PytorchImport> torch =
//       ReadPytorchSnapshot("snap.pickle", {.device = 0});
//   absl::StatusOr<BufferSet> set = TraceToBufferSet(torch->trace);
#ifndef TENSORMEM_TRACE_IMPORTERS_H_
#define TENSORMEM_TRACE_IMPORTERS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/trace/pytorch_recording.h"
#include "tensormem/trace/trace.h"

namespace tensormem {

// RMM logging CSV. Columns are found by header name; Thread and Time are
// optional. Each allocation gets the next id of a counter and each free the id
// of the live allocation at its pointer. `allocate failure` rows become failed
// requests. Pointers and streams may be hex (`0x…`) or decimal; streams become
// small indices (handle 0 -> 0, others 1, 2, … in order of appearance); Time
// (`HH:MM:SS.ffffff`) becomes `t=` nanoseconds since the first row.
absl::StatusOr<Trace> ParseRmmLog(std::string_view text,
                                  std::string_view source = "<input>");
absl::StatusOr<Trace> ReadRmmLog(const std::string& path);

struct PytorchSnapshotOptions {
  int device = 0;  // which device's trace to import
};

struct PytorchImport {
  Trace trace;
  // Blocks live before the first recorded event (reconstructed from the final
  // `segments`), emitted as allocations at the start of `trace`.
  int64_t blocks_live_at_start = 0;
  // Entries of other kinds (segment_*, free_requested, snapshot, ...).
  int64_t entries_skipped = 0;
  // Number of devices with a trace in the snapshot.
  int64_t devices = 0;
  // Segment events, block addresses and settings (pytorch_recording.h).
  PytorchRecording recording;
};

// A PyTorch memory snapshot: the chosen device's `alloc` / `free_completed`
// entries become allocations and frees (`oom` entries failed requests), with
// `t=` in nanoseconds since the first entry and streams as small indices.
// Errors name the entry, e.g. "snap.pickle: device_traces[0][17]: ...".
absl::StatusOr<PytorchImport> ParsePytorchSnapshot(
    std::string bytes, std::string_view source,
    const PytorchSnapshotOptions& options = {});
absl::StatusOr<PytorchImport> ReadPytorchSnapshot(
    const std::string& path, const PytorchSnapshotOptions& options = {});

// Buffer set -> trace: each buffer is allocated at `lower` and freed at
// `upper` (an `upper` past the last step still frees it); at equal times frees
// come before allocations, so buffers that only touch never overlap. Ids are
// the buffers' ids. Fails on duplicate ids or empty lifetimes.
absl::StatusOr<Trace> BufferSetToTrace(const BufferSet& set);

// Trace -> buffer set: a block allocated by event i and freed by event j is
// live in [i, j); blocks still live at the end end at the number of events.
// Failed requests are left out. Ids are the trace's ids when none is
// allocated twice, otherwise each buffer's allocation order (0, 1, ...).
// Fails when the trace frees an id that is not live or allocates a live one.
absl::StatusOr<BufferSet> TraceToBufferSet(
    const Trace& trace,
    IntervalConvention convention = IntervalConvention::kHalfOpen);

}  // namespace tensormem

#endif  // TENSORMEM_TRACE_IMPORTERS_H_
