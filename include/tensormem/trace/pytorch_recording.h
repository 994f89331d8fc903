// PytorchRecording: what a PyTorch memory snapshot says its caching allocator
// did, beside the allocations and frees: the segments it obtained and gave
// back (cudaMalloc / cudaFree, or the page mappings of expandable segments),
// the address of every block, and the allocator settings it ran with. It is
// the ground truth a replay under the `pytorch` policy is checked against
// (snapshot_replay.h).
//
//   TM_ASSIGN_OR_RETURN(PytorchImport read, ReadPytorchSnapshot("s.pickle"));
//   const PytorchRecording& rec = read.recording;
//   // rec.segments[0]: {kAlloc, address 0x7fc979e00000, 2 MiB, before event 0}
#ifndef TENSORMEM_TRACE_PYTORCH_RECORDING_H_
#define TENSORMEM_TRACE_PYTORCH_RECORDING_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tensormem {

struct RecordedSegmentEvent {
  enum class Kind : uint8_t {
    kAlloc,  // segment_alloc: a new segment (cudaMalloc)
    kFree,   // segment_free: a segment returned (cudaFree)
    kMap,    // segment_map: pages mapped into an expandable segment
    kUnmap,  // segment_unmap: pages of an expandable segment unmapped
  };
  Kind kind = Kind::kAlloc;
  int32_t stream = 0;  // small index, as the trace's events have
  uint64_t address = 0;
  uint64_t bytes = 0;
  size_t entry = 0;  // index in the device's trace
  // Index of the trace event it came before: the allocation that caused it,
  // or (a release not followed by a new segment) an empty_cache() call
  // between the events. The number of events when it came after the last.
  size_t before_event = 0;

  bool Adds() const { return kind == Kind::kAlloc || kind == Kind::kMap; }
};

// A segment as the recording knows it (not an event).
struct RecordedSegment {
  uint64_t address = 0;
  uint64_t bytes = 0;
  int32_t stream = 0;
  bool small = false;  // of the small pool (requests up to 1 MiB)
};

struct PytorchRecording {
  std::vector<RecordedSegmentEvent> segments;
  // Segments that existed before the first event (a recording that began
  // with memory reserved), in address order: the final segments less those
  // allocated during the recording, plus those freed in it. Not found for
  // expandable segments (empty).
  std::vector<RecordedSegment> initial_segments;
  // Per trace event: the block's recorded address (0 for frees and failed
  // requests), and the device-trace entry it came from (-1: a block already
  // live when recording began).
  std::vector<uint64_t> addresses;
  std::vector<int64_t> entries;
  // The snapshot's `allocator_settings` as the `pytorch` policy's
  // configuration (PYTORCH_CUDA_ALLOC_CONF syntax); unset when the snapshot
  // does not say.
  std::optional<std::string> config;
  // Whether the settings name expandable segments, and their garbage
  // collection threshold (0: none).
  bool expandable_segments = false;
  double garbage_collection_threshold = 0;
  // Peak of reserved bytes over the recording, counted from the segment
  // events (0 without them).
  uint64_t peak_reserved_bytes = 0;
  // Reserved bytes when recording began (> 0: a warm start), walked back from
  // the final segments through the segment events; expandable segments
  // included.
  uint64_t reserved_at_start_bytes = 0;
  int64_t segments_added = 0;  // segment_alloc and segment_map events

  bool has_segment_events() const { return !segments.empty(); }
};

}  // namespace tensormem

#endif  // TENSORMEM_TRACE_PYTORCH_RECORDING_H_
