#include "tensormem/plan/usage_record.h"

#include "absl/strings/str_format.h"

namespace tensormem {

absl::StatusOr<std::vector<UsageRecord<>>> ToUsageRecords(
    const BufferSet& set) {
  std::vector<UsageRecord<>> records;
  records.reserve(set.buffers.size());
  for (const Buffer& b : set.buffers) {
    if (b.lower < 0 || b.upper <= b.lower) {
      return absl::InvalidArgumentError(
          absl::StrFormat("buffer %d: lifetime [%d, %d) must be non-empty and "
                          "start at time >= 0",
                          b.id, b.lower, b.upper));
    }
    records.push_back({b.size, static_cast<TaskId>(b.lower),
                       static_cast<TaskId>(b.upper - 1)});
  }
  return records;
}

absl::StatusOr<BufferSet> FromUsageRecords(
    const std::vector<UsageRecord<>>& records) {
  BufferSet set;
  set.convention = IntervalConvention::kClosed;
  set.buffers.reserve(records.size());
  constexpr TaskId kLastRepresentable = static_cast<TaskId>(INT64_MAX - 1);
  for (size_t i = 0; i < records.size(); ++i) {
    const UsageRecord<>& r = records[i];
    if (r.first_task > r.last_task || r.last_task > kLastRepresentable) {
      return absl::InvalidArgumentError(
          absl::StrFormat("record %d: tasks [%d, %d] are not an interval of "
                          "representable tasks",
                          i, r.first_task, r.last_task));
    }
    Buffer buffer;
    buffer.id = i;
    buffer.lower = static_cast<int64_t>(r.first_task);
    buffer.upper = static_cast<int64_t>(r.last_task) + 1;
    buffer.size = r.tensor_size;
    set.buffers.push_back(buffer);
  }
  return set;
}

uint64_t TotalSize(const ObjectsAssignment<>& assignment) {
  uint64_t total = 0;
  for (uint64_t size : assignment.object_sizes) total += size;
  return total;
}

}  // namespace tensormem
