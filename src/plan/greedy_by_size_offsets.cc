#include <algorithm>
#include <numeric>

#include "absl/strings/str_format.h"
#include "tensormem/core/checked_math.h"
#include "tensormem/plan/offset_strategies.h"

namespace tensormem {

absl::StatusOr<OffsetsAssignment> ObjectsToOffsets(
    const ObjectsAssignment<>& objects, uint64_t alignment) {
  if (alignment == 0)
    return absl::InvalidArgumentError("alignment must be positive, got 0");
  const size_t num_objects = objects.object_sizes.size();
  std::vector<uint64_t> object_offsets(num_objects);
  OffsetsAssignment result;
  uint64_t next = 0;
  for (size_t k = 0; k < num_objects; ++k) {
    object_offsets[k] = next;
    const std::optional<uint64_t> end =
        CheckedAdd(next, objects.object_sizes[k]);
    const std::optional<uint64_t> aligned_end =
        end ? CheckedRoundUp(*end, alignment) : std::nullopt;
    if (!aligned_end) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "object %d of %d bytes at offset %d overflows 64 bits", k,
          objects.object_sizes[k], next));
    }
    result.total_size = *end;
    next = *aligned_end;
  }
  for (size_t i = 0; i < objects.object_ids.size(); ++i) {
    const size_t object = objects.object_ids[i];
    if (object >= num_objects) {
      return absl::InvalidArgumentError(
          absl::StrFormat("tensor %d: object %d does not exist (%d objects)", i,
                          object, num_objects));
    }
    result.offsets.push_back(object_offsets[object]);
  }
  return result;
}

absl::StatusOr<OffsetsAssignment> GreedyBySizeOffsets(
    const std::vector<UsageRecord<>>& records, uint64_t base_addr_align_bytes) {
  const uint64_t align = base_addr_align_bytes;
  if (align == 0)
    return absl::InvalidArgumentError("alignment must be positive, got 0");
  const size_t n = records.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return records[a].tensor_size > records[b].tensor_size;
  });

  OffsetsAssignment result;
  result.offsets.assign(n, 0);
  std::vector<size_t> by_offset;  // placed tensors in offset order
  for (size_t tensor : order) {
    const UsageRecord<>& record = records[tensor];
    uint64_t best_gap = UINT64_MAX;
    uint64_t best_offset = UINT64_MAX;
    uint64_t cursor = 0;  // aligned end of the overlapping tensors seen so far
    for (size_t placed : by_offset) {
      if (!records[placed].LiveAtSameTime(record)) continue;
      const uint64_t offset = result.offsets[placed];
      if (offset >= cursor) {
        const uint64_t gap = offset - cursor;
        if (gap >= record.tensor_size && gap < best_gap) {
          best_gap = gap;
          best_offset = cursor;
        }
      }
      cursor = std::max(cursor,
                        RoundUp(offset + records[placed].tensor_size, align));
    }
    if (result.total_size + by_offset.size() * (align - 1) < cursor) {
      return absl::InternalError("Total size is wrong.");
    }
    if (best_offset == UINT64_MAX) best_offset = cursor;
    auto position =
        std::upper_bound(by_offset.begin(), by_offset.end(), best_offset,
                         [&](uint64_t offset, size_t placed) {
                           return offset < result.offsets[placed];
                         });
    by_offset.insert(position, tensor);
    result.offsets[tensor] = best_offset;
    result.total_size =
        std::max(result.total_size, best_offset + record.tensor_size);
  }
  return result;
}

}  // namespace tensormem
