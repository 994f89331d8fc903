#include "plan/placed_interval_index.h"

#include <algorithm>
#include <numeric>

namespace tensormem::internal {

PlacedIntervalIndex::PlacedIntervalIndex(
    const std::vector<UsageRecord<>>& records)
    : records_(records), by_first_(records.size()), leaf_of_(records.size()) {
  std::iota(by_first_.begin(), by_first_.end(), 0);
  std::sort(by_first_.begin(), by_first_.end(), [&](size_t a, size_t b) {
    return records[a].first_task < records[b].first_task;
  });
  first_tasks_.reserve(records.size());
  for (size_t k = 0; k < by_first_.size(); ++k) {
    leaf_of_[by_first_[k]] = k;
    first_tasks_.push_back(records[by_first_[k]].first_task);
  }
  while (leaves_ < records.size()) leaves_ *= 2;
  nodes_.assign(2 * leaves_, Node{});
}

void PlacedIntervalIndex::Place(size_t tensor) {
  const TaskId last = records_[tensor].last_task;
  for (size_t node = leaves_ + leaf_of_[tensor]; node >= 1; node /= 2) {
    Node& entry = nodes_[node];
    if (entry.any_placed && entry.max_last >= last) break;
    entry = {true, last};
  }
}

void PlacedIntervalIndex::FindOverlapping(TaskId first, TaskId last,
                                          std::vector<size_t>& out) const {
  // Candidates start at or before `last`: positions [0, end).
  const size_t end =
      std::upper_bound(first_tasks_.begin(), first_tasks_.end(), last) -
      first_tasks_.begin();
  if (end == 0) return;
  struct Range {
    size_t node, begin, size;
  };
  Range stack[64];
  int top = 0;
  stack[top++] = {1, 0, leaves_};
  while (top > 0) {
    const Range range = stack[--top];
    const Node& node = nodes_[range.node];
    if (range.begin >= end || !node.any_placed || node.max_last < first) {
      continue;
    }
    if (range.size == 1) {
      out.push_back(by_first_[range.begin]);
      continue;
    }
    const size_t half = range.size / 2;
    stack[top++] = {2 * range.node + 1, range.begin + half, half};
    stack[top++] = {2 * range.node, range.begin, half};
  }
}

}  // namespace tensormem::internal
