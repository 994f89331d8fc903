// Internal to the snapshot reader: the parts of a PytorchRecording that come
// from the snapshot as a whole rather than from one trace entry.
#ifndef TENSORMEM_SRC_TRACE_PYTORCH_RECORDING_H_
#define TENSORMEM_SRC_TRACE_PYTORCH_RECORDING_H_

#include <cstdint>

#include "tensormem/trace/pickle.h"
#include "tensormem/trace/pytorch_recording.h"
#include "trace/pytorch_segments.h"
#include "trace/stream_index.h"

namespace tensormem::trace_internal {

// Fills `config` and `expandable_segments` from a snapshot's
// `allocator_settings` dict (keys it does not know are ignored).
void ReadAllocatorSettings(PickleValue settings, PytorchRecording& recording);

// Fills `initial_segments` from the final segments and the segment events;
// `streams` turns the final segments' stream handles into the events' indices.
void FindInitialSegments(const std::vector<SnapshotSegment>& final,
                         StreamIndex& streams, PytorchRecording& recording);

// Fills the peak of reserved bytes and the count of added segments from the
// segment events; `final_reserved` (the final segments' bytes) tells how much
// was reserved before the first event.
void CountReservedBytes(uint64_t final_reserved, PytorchRecording& recording);

}  // namespace tensormem::trace_internal

#endif  // TENSORMEM_SRC_TRACE_PYTORCH_RECORDING_H_
