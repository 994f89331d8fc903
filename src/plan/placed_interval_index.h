// An index of placed tensors that lists them: which placed tensors are live at
// some task of [first, last]? (The solver's local moves need the tensors
// themselves; the best-fit planners only need the space they take and use
// OccupancyIndex.)
//
// All tensors are known up front, so the index is a static segment tree over
// the tensors sorted by first task; each node keeps the latest last task among
// the *placed* tensors below it. A query visits only subtrees that can hold a
// match: O(log n + k log n) for k matches, and placing a tensor is O(log n).
#ifndef TENSORMEM_SRC_PLAN_PLACED_INTERVAL_INDEX_H_
#define TENSORMEM_SRC_PLAN_PLACED_INTERVAL_INDEX_H_

#include <vector>

#include "tensormem/plan/usage_record.h"

namespace tensormem::internal {

class PlacedIntervalIndex {
 public:
  explicit PlacedIntervalIndex(const std::vector<UsageRecord<>>& records);

  void Place(size_t tensor);

  // Appends to `out` every placed tensor whose interval meets [first, last].
  void FindOverlapping(TaskId first, TaskId last,
                       std::vector<size_t>& out) const;

 private:
  const std::vector<UsageRecord<>>& records_;
  std::vector<size_t> by_first_;     // tensors sorted by first task
  std::vector<TaskId> first_tasks_;  // first task of by_first_[k]
  std::vector<size_t> leaf_of_;      // tensor -> position in by_first_
  size_t leaves_ = 1;                // power of two >= n
  // Heap-ordered nodes: whether anything below is placed, and its latest last
  // task.
  struct Node {
    bool any_placed = false;
    TaskId max_last = 0;
  };
  std::vector<Node> nodes_;
};

}  // namespace tensormem::internal

#endif  // TENSORMEM_SRC_PLAN_PLACED_INTERVAL_INDEX_H_
