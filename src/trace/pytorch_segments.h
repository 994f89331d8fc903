// Internal to the snapshot reader: a snapshot's final `segments` (the state
// of the caching allocator when the snapshot was taken).
#ifndef TENSORMEM_SRC_TRACE_PYTORCH_SEGMENTS_H_
#define TENSORMEM_SRC_TRACE_PYTORCH_SEGMENTS_H_

#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/trace/pickle.h"

namespace tensormem::trace_internal {

// A block known by address: its requested size and stream handle.
struct SnapshotBlock {
  uint64_t bytes = 0;
  uint64_t stream = 0;
  uint64_t size = 0;  // the block's own (rounded) size; 0 when unknown
};

struct SnapshotSegment {
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint64_t stream = 0;
  bool small = false;  // segment_type "small": the small pool's
};

struct FinalSegments {
  std::vector<SnapshotSegment> segments;   // of the chosen device
  std::map<uint64_t, SnapshotBlock> live;  // blocks in use, by address
  uint64_t reserved = 0;                   // bytes of those segments
};

// "source: where: what", the form of every error of the snapshot readers.
absl::Status SnapshotError(std::string_view source, std::string_view where,
                           std::string_view what);
// A non-negative integer field of a dict; `where` names the dict in errors.
absl::StatusOr<int64_t> NonNegativeIntField(PickleValue dict,
                                            std::string_view key,
                                            std::string_view where,
                                            std::string_view source);

// Reads the `segments` list for `device` (segments of other devices are
// skipped). Errors name the segment and block, prefixed with `source`.
absl::StatusOr<FinalSegments> ReadFinalSegments(PickleValue segments,
                                                int device,
                                                std::string_view source);

}  // namespace tensormem::trace_internal

#endif  // TENSORMEM_SRC_TRACE_PYTORCH_SEGMENTS_H_
