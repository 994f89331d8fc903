#include "trace/pytorch_segments.h"

#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_format.h"
#include "tensormem/core/status_macros.h"

namespace tensormem::trace_internal {
namespace {

class SegmentsReader {
 public:
  SegmentsReader(std::string_view source, int device)
      : source_(source), device_(device) {}

  absl::StatusOr<FinalSegments> Read(PickleValue segments);

 private:
  absl::Status Error(std::string_view where, std::string_view what) const {
    return SnapshotError(source_, where, what);
  }
  absl::StatusOr<int64_t> IntField(PickleValue dict, std::string_view key,
                                   std::string_view where) const {
    return NonNegativeIntField(dict, key, where, source_);
  }
  // The blocks of one segment; live ones go into `final.live`.
  absl::Status ReadSegment(PickleValue segment, const std::string& where,
                           FinalSegments& final) const;
  // Adds `block` at `address` when its state is active.
  absl::Status ReadBlockState(PickleValue block, const std::string& where,
                              SnapshotBlock live_block, uint64_t address,
                              FinalSegments& final) const;

  std::string_view source_;
  int device_;
};

absl::StatusOr<FinalSegments> SegmentsReader::Read(PickleValue segments) {
  if (segments.kind() != PickleValue::Kind::kList) {
    return Error("segments", "is not a list");
  }
  FinalSegments final;
  for (size_t s = 0; s < segments.size(); ++s) {
    const std::string where = absl::StrFormat("segments[%d]", s);
    const PickleValue segment = segments[s];
    if (segment.kind() != PickleValue::Kind::kDict) {
      return Error(where, "is not a dict");
    }
    if (std::optional<PickleValue> device = segment.Find("device")) {
      if (device->AsInt() != device_) continue;
    }
    TM_RETURN_IF_ERROR(ReadSegment(segment, where, final));
  }
  return final;
}

absl::Status SegmentsReader::ReadSegment(PickleValue segment,
                                         const std::string& where,
                                         FinalSegments& final) const {
  TM_ASSIGN_OR_RETURN(const int64_t address,
                      IntField(segment, "address", where));
  SnapshotSegment read{.address = static_cast<uint64_t>(address)};
  if (std::optional<PickleValue> handle = segment.Find("stream")) {
    read.stream = static_cast<uint64_t>(handle->AsInt().value_or(0));
  }
  if (std::optional<PickleValue> type = segment.Find("segment_type")) {
    read.small = type->AsString() == "small";
  }
  std::optional<PickleValue> blocks = segment.Find("blocks");
  if (!blocks || blocks->kind() != PickleValue::Kind::kList) {
    return Error(where, "has no list of blocks");
  }
  // Blocks are in address order; older snapshots omit their addresses.
  uint64_t block_address = address;
  for (size_t b = 0; b < blocks->size(); ++b) {
    const std::string block_where = absl::StrFormat("%s.blocks[%d]", where, b);
    const PickleValue block = (*blocks)[b];
    if (block.kind() != PickleValue::Kind::kDict) {
      return Error(block_where, "is not a dict");
    }
    TM_ASSIGN_OR_RETURN(const int64_t size,
                        IntField(block, "size", block_where));
    if (block.Find("address")) {
      TM_ASSIGN_OR_RETURN(block_address,
                          IntField(block, "address", block_where));
    }
    const uint64_t bytes = static_cast<uint64_t>(size);
    TM_RETURN_IF_ERROR(ReadBlockState(
        block, block_where, {bytes, read.stream, bytes}, block_address, final));
    block_address += size;
    read.bytes += bytes;
  }
  // total_size, where given, counts what the blocks may not (unmapped pages
  // are no blocks).
  if (std::optional<PickleValue> total = segment.Find("total_size")) {
    read.bytes =
        static_cast<uint64_t>(std::max<int64_t>(0, total->AsInt().value_or(0)));
  }
  final.reserved += read.bytes;
  final.segments.push_back(read);
  return absl::OkStatus();
}

absl::Status SegmentsReader::ReadBlockState(PickleValue block,
                                            const std::string& where,
                                            SnapshotBlock live_block,
                                            uint64_t address,
                                            FinalSegments& final) const {
  std::optional<PickleValue> state = block.Find("state");
  const std::string_view state_name =
      state ? state->AsString().value_or("") : std::string_view();
  if (state_name == "inactive") return absl::OkStatus();
  // allocated, pending free, awaiting free
  if (!state_name.starts_with("active_")) {
    return Error(
        where, absl::StrFormat("unknown state '%s'", std::string(state_name)));
  }
  if (block.Find("requested_size")) {
    TM_ASSIGN_OR_RETURN(live_block.bytes,
                        IntField(block, "requested_size", where));
  }
  final.live[address] = live_block;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<FinalSegments> ReadFinalSegments(PickleValue segments,
                                                int device,
                                                std::string_view source) {
  return SegmentsReader(source, device).Read(segments);
}

absl::Status SnapshotError(std::string_view source, std::string_view where,
                           std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s: %s: %s", std::string(source), std::string(where),
                      std::string(what)));
}

absl::StatusOr<int64_t> NonNegativeIntField(PickleValue dict,
                                            std::string_view key,
                                            std::string_view where,
                                            std::string_view source) {
  std::optional<PickleValue> value = dict.Find(key);
  if (!value) {
    return SnapshotError(source, where,
                         absl::StrFormat("missing '%s'", std::string(key)));
  }
  std::optional<int64_t> number = value->AsInt();
  if (!number || *number < 0) {
    return SnapshotError(source, where,
                         absl::StrFormat("'%s' is not a non-negative integer",
                                         std::string(key)));
  }
  return *number;
}

}  // namespace tensormem::trace_internal
