// The address ranges already taken around a tensor's lifetime, for the
// best-fit planners, without visiting every overlapping tensor.
//
// A placed tensor overlaps [first, last] iff it is live at `first` or starts
// in (first, last]. Two segment trees answer these two halves:
//   - over time runs, each placed tensor is stored at the O(log n) nodes that
//     exactly cover its lifetime; the nodes on the path to `first` hold every
//     tensor live at `first`;
//   - over tensors sorted by first task, every node keeps the union of the
//     ranges of the placed tensors below it; O(log n) nodes cover the tensors
//     starting in (first, last].
// Each node keeps its ranges merged, so a query yields O(log n) short lists
// whose union is the occupied address space (on S_1, 10 lists of 165 ranges
// in all per query, against 1,500 overlapping tensors); FindGap merges them.
#ifndef TENSORMEM_SRC_PLAN_OCCUPANCY_INDEX_H_
#define TENSORMEM_SRC_PLAN_OCCUPANCY_INDEX_H_

#include <cstdint>
#include <vector>

#include "absl/container/btree_map.h"
#include "tensormem/plan/usage_record.h"

namespace tensormem::internal {

// Disjoint address ranges, begin -> end; overlapping or touching inserts merge.
class RangeUnion {
 public:
  void Insert(uint64_t begin, uint64_t end);
  bool empty() const { return ranges_.empty(); }
  const absl::btree_map<uint64_t, uint64_t>& ranges() const { return ranges_; }

 private:
  absl::btree_map<uint64_t, uint64_t> ranges_;
};

class OccupancyIndex {
 public:
  explicit OccupancyIndex(const std::vector<UsageRecord<>>& records);

  // Marks [offset, offset + size) taken for the tensor's lifetime (size > 0).
  void Place(size_t tensor, uint64_t offset);

  // Replaces `out` with lists whose union is the space taken by placed
  // tensors overlapping `tensor`'s lifetime.
  void Occupied(size_t tensor, std::vector<const RangeUnion*>& out) const;

 private:
  const std::vector<UsageRecord<>>& records_;
  std::vector<TaskId> boundaries_;  // sorted starts of time runs
  size_t time_leaves_ = 1;
  std::vector<RangeUnion> time_nodes_;
  std::vector<TaskId> sorted_firsts_;  // first tasks in position order
  std::vector<size_t> position_;       // tensor -> position among sorted firsts
  size_t position_leaves_ = 1;
  std::vector<RangeUnion> position_nodes_;
};

// The offset for a tensor of `size` bytes among the taken `lists`: the
// tightest (best fit) or lowest (first fit) free gap that fits, else the
// aligned top of everything taken. Gaps start at aligned ends of taken ranges
// (or 0); on equal gaps the lowest wins.
uint64_t FindGap(const std::vector<const RangeUnion*>& lists, uint64_t size,
                 bool first_fit, uint64_t alignment);

}  // namespace tensormem::internal

#endif  // TENSORMEM_SRC_PLAN_OCCUPANCY_INDEX_H_
