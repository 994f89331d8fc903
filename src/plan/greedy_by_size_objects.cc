#include <algorithm>

#include "tensormem/plan/object_strategies.h"
#include "tensormem/plan/task_profiles.h"

namespace tensormem {
namespace {

// What GreedyBySize knows about one unassigned tensor.
struct Priority {
  size_t position = 0;  // index of the last positional maximum >= size
  uint64_t size = 0;
  std::vector<size_t>
      distance;  // per object: nearest gap in tasks, or kNotAssigned
  size_t best_distance = kNotAssigned;
  size_t best_object =
      kNotAssigned;  // stale when best_distance is kNotAssigned

  // Earlier position, then nearer object, then larger size.
  bool Before(const Priority& other) const {
    if (position != other.position) return position < other.position;
    if (best_distance != other.best_distance)
      return best_distance < other.best_distance;
    return size > other.size;
  }

  // The first object with the least distance; leaves best_object as it was
  // when no object is at a finite distance.
  void RecomputeBest() {
    best_distance = kNotAssigned;
    for (size_t object = 0; object < distance.size(); ++object) {
      if (distance[object] < best_distance) {
        best_distance = distance[object];
        best_object = object;
      }
    }
  }
};

// Tasks between two disjoint intervals (>= 1), or kNotAssigned if they meet.
size_t Distance(const UsageRecord<>& a, const UsageRecord<>& b) {
  if (a.last_task < b.first_task) return b.first_task - a.last_task;
  if (b.last_task < a.first_task) return a.first_task - b.last_task;
  return kNotAssigned;
}

}  // namespace

absl::StatusOr<ObjectsAssignment<>> GreedyBySizeDistPriorityAssignment(
    const std::vector<UsageRecord<>>& records) {
  const std::vector<uint64_t> maximums = CalculatePositionalMaximums(records);
  const size_t n = records.size();
  std::vector<Priority> priorities(n);
  for (size_t i = 0; i < n; ++i) {
    priorities[i].size = records[i].tensor_size;
    size_t count = 0;
    while (count < maximums.size() && maximums[count] >= records[i].tensor_size)
      ++count;
    if (count == 0)
      return absl::InternalError("Variable pos must be positive.");
    priorities[i].position = count - 1;
  }

  ObjectsAssignment<> assignment;
  assignment.object_ids.assign(n, kNotAssigned);
  for (size_t step = 0; step < n; ++step) {
    size_t chosen = kNotAssigned;
    for (size_t i = 0; i < n; ++i) {
      if (assignment.object_ids[i] != kNotAssigned) continue;
      if (chosen == kNotAssigned || priorities[i].Before(priorities[chosen]))
        chosen = i;
    }
    const bool new_object = priorities[chosen].best_distance == kNotAssigned;
    size_t object = priorities[chosen].best_object;
    if (new_object) {
      object = assignment.object_sizes.size();
      assignment.object_sizes.push_back(records[chosen].tensor_size);
    } else {
      assignment.object_sizes[object] = std::max(
          assignment.object_sizes[object], records[chosen].tensor_size);
    }
    assignment.object_ids[chosen] = object;

    for (size_t i = 0; i < n; ++i) {
      if (assignment.object_ids[i] != kNotAssigned) continue;
      Priority& priority = priorities[i];
      if (!new_object && priority.distance[object] == kNotAssigned)
        continue;  // excluded
      const size_t distance = Distance(records[i], records[chosen]);
      if (new_object) {
        priority.distance.push_back(distance);
      } else if (distance == kNotAssigned) {
        priority.distance[object] = kNotAssigned;
        if (priority.best_object == object) priority.RecomputeBest();
      } else {
        priority.distance[object] =
            std::min(priority.distance[object], distance);
      }
      if (distance < priority.best_distance) {
        priority.best_distance = distance;
        priority.best_object = object;
      }
    }
  }
  return assignment;
}

absl::StatusOr<ObjectsAssignment<>> BestGreedy(
    const std::vector<UsageRecord<>>& records) {
  absl::StatusOr<ObjectsAssignment<>> by_size =
      GreedyBySizeDistPriorityAssignment(records);
  if (!by_size.ok()) return by_size.status();
  absl::StatusOr<ObjectsAssignment<>> by_breadth =
      GreedyByBreadthAssignment(records);
  if (by_breadth.ok() && TotalSize(*by_breadth) < TotalSize(*by_size))
    return by_breadth;
  return by_size;
}

}  // namespace tensormem
