#include "plan/occupancy_index.h"

#include <algorithm>
#include <numeric>

#include "tensormem/core/checked_math.h"

namespace tensormem::internal {
namespace {

size_t PowerOfTwoAtLeast(size_t n) {
  size_t leaves = 1;
  while (leaves < n) leaves *= 2;
  return leaves;
}

}  // namespace

void RangeUnion::Insert(uint64_t begin, uint64_t end) {
  // Absorb a range that starts before and reaches `begin`.
  auto it = ranges_.upper_bound(begin);
  if (it != ranges_.begin()) {
    auto before = std::prev(it);
    if (before->second >= begin) {
      if (before->second >= end) return;
      begin = before->first;
      it = ranges_.erase(before);
    }
  }
  // Absorb ranges that start within [begin, end].
  while (it != ranges_.end() && it->first <= end) {
    end = std::max(end, it->second);
    it = ranges_.erase(it);
  }
  ranges_.emplace_hint(it, begin, end);
}

OccupancyIndex::OccupancyIndex(const std::vector<UsageRecord<>>& records)
    : records_(records), position_(records.size()) {
  for (const UsageRecord<>& r : records) {
    boundaries_.push_back(r.first_task);
    boundaries_.push_back(r.last_task + 1);
  }
  std::sort(boundaries_.begin(), boundaries_.end());
  boundaries_.erase(std::unique(boundaries_.begin(), boundaries_.end()),
                    boundaries_.end());
  time_leaves_ = PowerOfTwoAtLeast(boundaries_.size());
  time_nodes_.resize(2 * time_leaves_);

  std::vector<size_t> by_first(records.size());
  std::iota(by_first.begin(), by_first.end(), 0);
  std::stable_sort(by_first.begin(), by_first.end(), [&](size_t a, size_t b) {
    return records[a].first_task < records[b].first_task;
  });
  for (size_t p = 0; p < by_first.size(); ++p) {
    position_[by_first[p]] = p;
    sorted_firsts_.push_back(records[by_first[p]].first_task);
  }
  position_leaves_ = PowerOfTwoAtLeast(records.size());
  position_nodes_.resize(2 * position_leaves_);
}

void OccupancyIndex::Place(size_t tensor, uint64_t offset) {
  const UsageRecord<>& r = records_[tensor];
  const uint64_t end = offset + r.tensor_size;
  auto run = [&](TaskId task) {
    return std::lower_bound(boundaries_.begin(), boundaries_.end(), task) -
           boundaries_.begin();
  };
  // Canonical cover of the runs [run(first), run(last + 1)).
  for (size_t lo = run(r.first_task) + time_leaves_,
              hi = run(r.last_task + 1) + time_leaves_;
       lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1) time_nodes_[lo++].Insert(offset, end);
    if (hi & 1) time_nodes_[--hi].Insert(offset, end);
  }
  for (size_t node = position_[tensor] + position_leaves_; node >= 1;
       node /= 2) {
    position_nodes_[node].Insert(offset, end);
  }
}

void OccupancyIndex::Occupied(size_t tensor,
                              std::vector<const RangeUnion*>& out) const {
  out.clear();
  const UsageRecord<>& r = records_[tensor];
  // Live at first_task: the path from its run to the root.
  const size_t run =
      std::lower_bound(boundaries_.begin(), boundaries_.end(), r.first_task) -
      boundaries_.begin();
  for (size_t node = run + time_leaves_; node >= 1; node /= 2) {
    if (!time_nodes_[node].empty()) out.push_back(&time_nodes_[node]);
  }
  // Starting in (first_task, last_task].
  const size_t begin = std::upper_bound(sorted_firsts_.begin(),
                                        sorted_firsts_.end(), r.first_task) -
                       sorted_firsts_.begin();
  const size_t end = std::upper_bound(sorted_firsts_.begin(),
                                      sorted_firsts_.end(), r.last_task) -
                     sorted_firsts_.begin();
  auto visit = [&](size_t node) {
    if (!position_nodes_[node].empty()) out.push_back(&position_nodes_[node]);
  };
  for (size_t lo = begin + position_leaves_, hi = end + position_leaves_;
       lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1) visit(lo++);
    if (hi & 1) visit(--hi);
  }
}

uint64_t FindGap(const std::vector<const RangeUnion*>& lists, uint64_t size,
                 bool first_fit, uint64_t alignment) {
  // Walk x upwards over gaps. Each list remembers the start of its first
  // range above the x it was last probed at; only lists whose next range x
  // has reached are probed again. There are O(log n) lists, so a linear scan
  // beats a heap.
  constexpr uint64_t kNoneAbove = UINT64_MAX;
  if (lists.empty()) return 0;
  std::vector<uint64_t> next_begin(lists.size(), 0);
  uint64_t best_offset = 0;
  uint64_t best_gap = UINT64_MAX;
  uint64_t x = 0;  // candidate start: 0 or an aligned end of a taken range
  while (true) {
    // Jump past every taken range containing x.
    for (bool moved = true; moved;) {
      moved = false;
      for (size_t i = 0; i < lists.size(); ++i) {
        if (next_begin[i] > x) continue;
        const auto& ranges = lists[i]->ranges();
        auto next = ranges.upper_bound(x);
        if (next != ranges.begin() && std::prev(next)->second > x) {
          // Rounding up may land inside this list's next range: probe again.
          x = RoundUp(std::prev(next)->second, alignment);
          moved = true;
          continue;
        }
        next_begin[i] = next == ranges.end() ? kNoneAbove : next->first;
      }
    }
    // x is free in every list; the gap runs to the nearest taken start.
    const uint64_t gap_end =
        *std::min_element(next_begin.begin(), next_begin.end());
    if (gap_end == kNoneAbove) break;  // x is above everything taken
    const uint64_t gap = gap_end - x;
    if (gap >= size) {
      if (first_fit || gap == size) return x;  // nothing fits tighter
      if (gap < best_gap) {
        best_gap = gap;
        best_offset = x;
      }
    }
    x = gap_end;
  }
  return best_gap == UINT64_MAX ? x : best_offset;
}

}  // namespace tensormem::internal
