#include "tensormem/plan/task_profiles.h"

#include <algorithm>

namespace tensormem {
namespace {

void SortBySizeDescending(const std::vector<UsageRecord<>>& records,
                          TaskProfile& profile) {
  // Records are appended in index order, so a stable sort keeps index order on
  // ties.
  std::stable_sort(profile.begin(), profile.end(), [&](size_t a, size_t b) {
    return records[a].tensor_size > records[b].tensor_size;
  });
}

// Sorted distinct task numbers where some live set changes.
std::vector<TaskId> SegmentBoundaries(
    const std::vector<UsageRecord<>>& records) {
  std::vector<TaskId> boundaries;
  boundaries.reserve(records.size() * 2);
  for (const UsageRecord<>& r : records) {
    boundaries.push_back(r.first_task);
    boundaries.push_back(r.last_task + 1);
  }
  std::sort(boundaries.begin(), boundaries.end());
  boundaries.erase(std::unique(boundaries.begin(), boundaries.end()),
                   boundaries.end());
  return boundaries;
}

// Index in `boundaries` of the run starting at `task` (which is a boundary).
size_t RunIndex(const std::vector<TaskId>& boundaries, TaskId task) {
  return std::lower_bound(boundaries.begin(), boundaries.end(), task) -
         boundaries.begin();
}

}  // namespace

std::vector<TaskProfile> CalculateTaskProfiles(
    const std::vector<UsageRecord<>>& records) {
  TaskId num_tasks = 0;
  for (const UsageRecord<>& r : records)
    num_tasks = std::max(num_tasks, r.last_task + 1);
  std::vector<TaskProfile> profiles(num_tasks);
  for (size_t i = 0; i < records.size(); ++i) {
    for (TaskId task = records[i].first_task; task <= records[i].last_task;
         ++task) {
      profiles[task].push_back(i);
    }
  }
  for (TaskProfile& profile : profiles) SortBySizeDescending(records, profile);
  return profiles;
}

SegmentProfiles CalculateSegmentProfiles(
    const std::vector<UsageRecord<>>& records) {
  const std::vector<TaskId> boundaries = SegmentBoundaries(records);
  std::vector<TaskProfile> runs(boundaries.empty() ? 0 : boundaries.size() - 1);
  for (size_t i = 0; i < records.size(); ++i) {
    const size_t begin = RunIndex(boundaries, records[i].first_task);
    const size_t end = RunIndex(boundaries, records[i].last_task + 1);
    for (size_t run = begin; run < end; ++run) runs[run].push_back(i);
  }
  SegmentProfiles result;
  for (size_t run = 0; run < runs.size(); ++run) {
    if (runs[run].empty()) continue;
    SortBySizeDescending(records, runs[run]);
    result.first_tasks.push_back(boundaries[run]);
    result.profiles.push_back(std::move(runs[run]));
  }
  return result;
}

uint64_t CountSegmentProfileEntries(const std::vector<UsageRecord<>>& records) {
  const std::vector<TaskId> boundaries = SegmentBoundaries(records);
  uint64_t entries = 0;
  for (const UsageRecord<>& r : records) {
    entries += RunIndex(boundaries, r.last_task + 1) -
               RunIndex(boundaries, r.first_task);
  }
  return entries;
}

std::vector<uint64_t> CalculatePositionalMaximums(
    const std::vector<UsageRecord<>>& records) {
  std::vector<uint64_t> maximums;
  for (const TaskProfile& profile :
       CalculateSegmentProfiles(records).profiles) {
    if (maximums.size() < profile.size()) maximums.resize(profile.size(), 0);
    for (size_t k = 0; k < profile.size(); ++k) {
      maximums[k] = std::max(maximums[k], records[profile[k]].tensor_size);
    }
  }
  return maximums;
}

uint64_t SharedObjectsLowerBound(const std::vector<UsageRecord<>>& records) {
  uint64_t sum = 0;
  for (uint64_t maximum : CalculatePositionalMaximums(records)) sum += maximum;
  return sum;
}

uint64_t MaxBreadth(const std::vector<UsageRecord<>>& records) {
  // Sweep: +size at first_task, -size after last_task; releases at a time
  // come before acquisitions at it (last + 1 is the first free task).
  std::vector<std::pair<TaskId, int64_t>> events;
  events.reserve(records.size() * 2);
  for (const UsageRecord<>& r : records) {
    events.emplace_back(r.first_task, static_cast<int64_t>(r.tensor_size));
    events.emplace_back(r.last_task + 1, -static_cast<int64_t>(r.tensor_size));
  }
  std::sort(events.begin(), events.end());
  int64_t live = 0;
  int64_t peak = 0;
  for (const auto& [task, delta] : events) {
    live += delta;
    peak = std::max(peak, live);
  }
  return static_cast<uint64_t>(peak);
}

}  // namespace tensormem
