#include <algorithm>
#include <set>
#include <utility>

#include "tensormem/plan/object_strategies.h"
#include "tensormem/plan/task_profiles.h"

namespace tensormem {
namespace {

// The tensors of one object as (first_task, record), ordered by first task;
// tensors sharing an object never overlap, so first tasks are distinct.
using Schedule = std::set<std::pair<TaskId, size_t>>;

bool FitsSchedule(const Schedule& schedule,
                  const std::vector<UsageRecord<>>& records,
                  const UsageRecord<>& record) {
  auto next = schedule.lower_bound({record.first_task, 0});
  if (next != schedule.end() && next->first <= record.last_task) return false;
  if (next != schedule.begin() &&
      records[std::prev(next)->second].last_task >= record.first_task) {
    return false;
  }
  return true;
}

// Whether an object of `candidate` bytes may replace the best so far for a
// tensor of `size` bytes: while the best is too small, a larger one; once it
// fits, a smaller one that still fits.
bool Improves(uint64_t candidate, uint64_t best, uint64_t size) {
  if (best < size) return candidate > best;
  return candidate >= size && candidate < best;
}

}  // namespace

absl::StatusOr<ObjectsAssignment<>> GreedyByBreadthAssignment(
    const std::vector<UsageRecord<>>& records) {
  // Runs of tasks with one live set stand for all their tasks: after the first
  // task of a run is processed, the others find every tensor assigned.
  const SegmentProfiles segments = CalculateSegmentProfiles(records);
  struct Breadth {
    uint64_t bytes;
    size_t segment;
  };
  std::vector<Breadth> order;
  order.reserve(segments.profiles.size());
  for (size_t s = 0; s < segments.profiles.size(); ++s) {
    uint64_t bytes = 0;
    for (size_t tensor : segments.profiles[s])
      bytes += records[tensor].tensor_size;
    order.push_back({bytes, s});
  }
  // Widest first; equal breadths in increasing task order.
  std::stable_sort(
      order.begin(), order.end(),
      [](const Breadth& a, const Breadth& b) { return a.bytes > b.bytes; });

  ObjectsAssignment<> assignment;
  assignment.object_ids.assign(records.size(), kNotAssigned);
  std::vector<Schedule> schedules;
  for (const Breadth& breadth : order) {
    for (size_t tensor : segments.profiles[breadth.segment]) {
      if (assignment.object_ids[tensor] != kNotAssigned) continue;
      const UsageRecord<>& record = records[tensor];
      size_t best = kNotAssigned;
      for (size_t object = 0; object < schedules.size(); ++object) {
        if (best != kNotAssigned &&
            !Improves(assignment.object_sizes[object],
                      assignment.object_sizes[best], record.tensor_size)) {
          continue;
        }
        if (FitsSchedule(schedules[object], records, record)) best = object;
      }
      if (best == kNotAssigned) {
        best = schedules.size();
        schedules.emplace_back();
        assignment.object_sizes.push_back(record.tensor_size);
      }
      schedules[best].emplace(record.first_task, tensor);
      assignment.object_sizes[best] =
          std::max(assignment.object_sizes[best], record.tensor_size);
      assignment.object_ids[tensor] = best;
    }
  }
  if (std::find(assignment.object_ids.begin(), assignment.object_ids.end(),
                kNotAssigned) != assignment.object_ids.end()) {
    return absl::InternalError("Error while calculating the assignment.");
  }
  return assignment;
}

}  // namespace tensormem
