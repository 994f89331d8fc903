// Task profiles, positional maximums and the lower bounds they give.
//
// The profile of a task is the list of tensors live during it, largest first
// (equal sizes keep record order). The k-th positional maximum is the largest
// k-th-largest tensor over all tasks; their sum bounds any shared-objects plan
// from below, and the largest per-task sum of sizes (max breadth, the peak of
// live bytes) bounds any offsets plan from below.
//
//   std::vector<uint64_t> pm = CalculatePositionalMaximums(records);
//   uint64_t objects_bound = SharedObjectsLowerBound(records);  // == sum(pm)
//
// Tasks between two consecutive interval endpoints have identical profiles,
// so the planners work on SegmentProfiles (one per distinct run of tasks, at
// most 2n of them) rather than one profile per task: MiniMalloc sets number
// their tasks up to 10^6 but have only a few hundred buffers.
#ifndef TENSORMEM_PLAN_TASK_PROFILES_H_
#define TENSORMEM_PLAN_TASK_PROFILES_H_

#include <cstdint>
#include <vector>

#include "tensormem/plan/usage_record.h"

namespace tensormem {

// Record indices, by size descending, ties by ascending index.
using TaskProfile = std::vector<size_t>;

// One profile per task 0..max(last_task); empty when there are no records.
// Costs O(sum of interval lengths): for tests and small inputs.
std::vector<TaskProfile> CalculateTaskProfiles(
    const std::vector<UsageRecord<>>& records);

// Profiles of the maximal runs of tasks that share one live set. Runs with no
// live tensor are left out. `first_tasks[k]` is the first task of run k, in
// increasing order.
struct SegmentProfiles {
  std::vector<TaskId> first_tasks;
  std::vector<TaskProfile> profiles;
};
SegmentProfiles CalculateSegmentProfiles(
    const std::vector<UsageRecord<>>& records);

// Number of (segment, tensor) pairs CalculateSegmentProfiles would build; lets
// callers refuse inputs whose profiles would not fit in memory. O(n log n).
uint64_t CountSegmentProfileEntries(const std::vector<UsageRecord<>>& records);

// Element k: the maximum over tasks of the k-th largest live tensor.
// Non-increasing.
std::vector<uint64_t> CalculatePositionalMaximums(
    const std::vector<UsageRecord<>>& records);

// Sum of positional maximums: no shared-objects plan is smaller.
uint64_t SharedObjectsLowerBound(const std::vector<UsageRecord<>>& records);

// Largest per-task sum of live sizes (peak live bytes): no offsets plan is
// smaller.
uint64_t MaxBreadth(const std::vector<UsageRecord<>>& records);

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_TASK_PROFILES_H_
