#include "plan/solver/local_moves.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "plan/placed_interval_index.h"
#include "tensormem/core/checked_math.h"

namespace tensormem::solver_internal {
namespace {

uint64_t TotalSize(const std::vector<UsageRecord<>>& records,
                   const std::vector<uint64_t>& offsets) {
  uint64_t total = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].tensor_size > 0)
      total = std::max(total, offsets[i] + records[i].tensor_size);
  }
  return total;
}

// The lowest aligned offset at which `tensor` fits between its neighbours
// and ends strictly below `total`, if any.
std::optional<uint64_t> LowestGapBelow(
    const std::vector<UsageRecord<>>& records,
    const std::vector<uint64_t>& offsets, size_t tensor,
    const std::vector<size_t>& neighbours, uint64_t alignment, uint64_t total) {
  std::vector<std::pair<uint64_t, uint64_t>>
      taken;  // [begin, end) of neighbours
  for (const size_t other : neighbours) {
    if (other == tensor || records[other].tensor_size == 0) continue;
    taken.emplace_back(offsets[other],
                       offsets[other] + records[other].tensor_size);
  }
  std::sort(taken.begin(), taken.end());
  const uint64_t size = records[tensor].tensor_size;
  uint64_t candidate = 0;
  for (const auto& [begin, end] : taken) {
    if (candidate + size <= begin) break;
    candidate = std::max(candidate, RoundUp(end, alignment));
  }
  if (candidate + size >= total) return std::nullopt;
  return candidate;
}

}  // namespace

uint64_t ImproveByLocalMoves(const std::vector<UsageRecord<>>& records,
                             uint64_t alignment, std::vector<uint64_t>& offsets,
                             std::chrono::steady_clock::time_point deadline) {
  internal::PlacedIntervalIndex index(records);
  for (size_t i = 0; i < records.size(); ++i) index.Place(i);
  uint64_t total = TotalSize(records, offsets);
  std::vector<size_t> neighbours;
  while (std::chrono::steady_clock::now() < deadline) {
    bool all_moved = true;
    for (size_t i = 0; i < records.size() && all_moved; ++i) {
      if (records[i].tensor_size == 0 ||
          offsets[i] + records[i].tensor_size != total)
        continue;
      neighbours.clear();
      index.FindOverlapping(records[i].first_task, records[i].last_task,
                            neighbours);
      const std::optional<uint64_t> lower =
          LowestGapBelow(records, offsets, i, neighbours, alignment, total);
      if (lower) {
        offsets[i] = *lower;
      } else {
        all_moved = false;
      }
    }
    if (!all_moved) break;
    total = TotalSize(records, offsets);
  }
  return TotalSize(records, offsets);
}

}  // namespace tensormem::solver_internal
