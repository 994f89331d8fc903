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
  // Merge the lists' ranges by start (each list is sorted; there are O(log n)
  // lists of a few ranges each on average, so a scan for the smallest head
  // beats a heap) and sweep: a gap opens wherever the next range starts above
  // the aligned end of everything before it.
  using Iterator = absl::btree_map<uint64_t, uint64_t>::const_iterator;
  struct Head {
    Iterator next;
    Iterator end;
  };
  std::vector<Head> heads;
  heads.reserve(lists.size());
  for (const RangeUnion* list : lists) {
    heads.push_back({list->ranges().begin(), list->ranges().end()});
  }
  uint64_t best_offset = 0;
  uint64_t best_gap = UINT64_MAX;
  uint64_t x = 0;  // 0 or the aligned end of the highest range so far
  while (!heads.empty()) {
    size_t lowest = 0;
    for (size_t i = 1; i < heads.size(); ++i) {
      if (heads[i].next->first < heads[lowest].next->first) lowest = i;
    }
    const auto [begin, end] = *heads[lowest].next;
    if (begin >= x && begin - x >= size) {
      if (first_fit || begin - x == size) return x;  // nothing fits tighter
      if (begin - x < best_gap) {
        best_gap = begin - x;
        best_offset = x;
      }
    }
    x = std::max(x, RoundUp(end, alignment));
    if (++heads[lowest].next == heads[lowest].end) {
      heads[lowest] = heads.back();
      heads.pop_back();
    }
  }
  return best_gap == UINT64_MAX ? x : best_offset;
}

}  // namespace tensormem::internal
