// Usage records and assignments: the TFLite-style model of a static plan.
//
// A usage record is one tensor: its size and the *closed* interval
// [first_task, last_task] of operators that use it. Two records conflict when
// `a.first_task <= b.last_task && b.first_task <= a.last_task` (touching at a
// single task counts). Records are indexed by position; the strategies never
// sort their input, so input order is part of the problem.
//
// BufferSet (half-open [lower, upper)) is the file and CLI representation;
// ToUsageRecords / FromUsageRecords convert explicitly between the two:
//
//   TM_ASSIGN_OR_RETURN(std::vector<UsageRecord<>> records,
//                       ToUsageRecords(set));
//   ObjectsAssignment<> objects = NaiveAssignment(records);
//
// `Size` is uint64_t for byte sizes, or Extent2 / Extent3 for 2-D / 3-D
// textures (used by the multidimensional strategies).
#ifndef TENSORMEM_PLAN_USAGE_RECORD_H_
#define TENSORMEM_PLAN_USAGE_RECORD_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/plan/buffer_set.h"

namespace tensormem {

// A task (operator) index.
using TaskId = size_t;

// Marks "no object / no distance yet" wherever an index or distance is unknown.
inline constexpr size_t kNotAssigned = std::numeric_limits<size_t>::max();

// A 2-D texture extent; `x * y` elements.
struct Extent2 {
  uint32_t x = 0;
  uint32_t y = 0;
  friend bool operator==(const Extent2&, const Extent2&) = default;
};

// A 3-D texture extent; `x * y * z` elements.
struct Extent3 {
  uint32_t x = 0;
  uint32_t y = 0;
  uint32_t z = 0;
  friend bool operator==(const Extent3&, const Extent3&) = default;
};

template <typename Size = uint64_t>
struct UsageRecord {
  Size tensor_size{};
  TaskId first_task = 0;
  TaskId last_task = 0;

  // Closed intervals: sharing a single task is a conflict.
  bool LiveAtSameTime(const UsageRecord& other) const {
    return first_task <= other.last_task && other.first_task <= last_task;
  }
};

// Tensor i lives in object `object_ids[i]`; object k has `object_sizes[k]`.
template <typename Size = uint64_t>
struct ObjectsAssignment {
  std::vector<size_t> object_ids;
  std::vector<Size> object_sizes;
};

// Tensor i starts at byte `offsets[i]` of one arena of `total_size` bytes.
struct OffsetsAssignment {
  std::vector<uint64_t> offsets;
  uint64_t total_size = 0;
};

// Buffer i of `set` becomes record i: [lower, upper) -> [lower, upper - 1].
// Fails, naming the buffer, when a lifetime is negative or empty.
absl::StatusOr<std::vector<UsageRecord<>>> ToUsageRecords(const BufferSet& set);

// Record i becomes buffer i (id i): [first, last] -> [first, last + 1), in the
// closed convention so that writing the set gives back the same task numbers.
// Fails when a record has first_task > last_task or a task beyond INT64_MAX
// - 1.
absl::StatusOr<BufferSet> FromUsageRecords(
    const std::vector<UsageRecord<>>& records);

// Sum of object sizes: the memory a shared-objects plan needs.
uint64_t TotalSize(const ObjectsAssignment<>& assignment);

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_USAGE_RECORD_H_
