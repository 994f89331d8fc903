#include "plan/solver/local_moves.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "plan/placed_interval_index.h"
#include "plan/solver/solver_clock.h"
#include "tensormem/core/checked_math.h"

namespace tensormem::solver_internal {
namespace {

// An address range a pending move has claimed for a buffer live at the same
// time, so a gap search must avoid it.
struct Claim {
  uint64_t begin = 0;
  uint64_t end = 0;
};

// The lowest aligned offset at which `tensor` fits between its neighbours
// (ignoring `skip`, and avoiding `claim`) and ends strictly below `total`.
std::optional<uint64_t> LowestGapBelow(
    const std::vector<UsageRecord<>>& records,
    const std::vector<uint64_t>& offsets, size_t tensor,
    const std::vector<size_t>& neighbours, uint64_t alignment, uint64_t total,
    size_t skip, std::optional<Claim> claim) {
  std::vector<std::pair<uint64_t, uint64_t>> taken;  // [begin, end)
  for (const size_t other : neighbours) {
    if (other == tensor || other == skip || records[other].tensor_size == 0)
      continue;
    taken.emplace_back(offsets[other],
                       offsets[other] + records[other].tensor_size);
  }
  if (claim) taken.emplace_back(claim->begin, claim->end);
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

// Spots worth trying for `tensor`: the bottom and the aligned tops of its
// neighbours, sorted, without repeats.
std::vector<uint64_t> CandidateSpots(const std::vector<UsageRecord<>>& records,
                                     const std::vector<uint64_t>& offsets,
                                     size_t tensor,
                                     const std::vector<size_t>& neighbours,
                                     uint64_t alignment) {
  std::vector<uint64_t> spots = {0};
  for (const size_t other : neighbours) {
    if (other != tensor && records[other].tensor_size > 0) {
      spots.push_back(
          RoundUp(offsets[other] + records[other].tensor_size, alignment));
    }
  }
  std::sort(spots.begin(), spots.end());
  spots.erase(std::unique(spots.begin(), spots.end()), spots.end());
  return spots;
}

// The one neighbour of `tensor` whose addresses overlap [spot, spot + size),
// if exactly one does.
std::optional<size_t> SoleBlocker(const std::vector<UsageRecord<>>& records,
                                  const std::vector<uint64_t>& offsets,
                                  size_t tensor,
                                  const std::vector<size_t>& neighbours,
                                  uint64_t spot, uint64_t size) {
  std::optional<size_t> blocker;
  for (const size_t other : neighbours) {
    const uint64_t other_size = records[other].tensor_size;
    if (other == tensor || other_size == 0) continue;
    if (offsets[other] < spot + size && spot < offsets[other] + other_size) {
      if (blocker) return std::nullopt;
      blocker = other;
    }
  }
  return blocker;
}

// Lowers `tensor` below `total` by moving the one neighbour that blocks some
// lower spot into a gap of its own, also below `total`. True if it did.
bool LowerWithOneEjection(const std::vector<UsageRecord<>>& records,
                          const internal::PlacedIntervalIndex& index,
                          std::vector<uint64_t>& offsets, size_t tensor,
                          const std::vector<size_t>& neighbours,
                          uint64_t alignment, uint64_t total,
                          const std::vector<uint8_t>& fixed,
                          std::chrono::steady_clock::time_point deadline) {
  const uint64_t size = records[tensor].tensor_size;
  std::vector<size_t> blocker_neighbours;
  for (const uint64_t spot :
       CandidateSpots(records, offsets, tensor, neighbours, alignment)) {
    if (spot + size >= total) break;
    SolverClock::Count();
    if (SolverClock::Now() >= deadline) return false;
    const std::optional<size_t> blocker =
        SoleBlocker(records, offsets, tensor, neighbours, spot, size);
    if (!blocker || (!fixed.empty() && fixed[*blocker] != 0)) continue;
    blocker_neighbours.clear();
    index.FindOverlapping(records[*blocker].first_task,
                          records[*blocker].last_task, blocker_neighbours);
    const std::optional<uint64_t> moved =
        LowestGapBelow(records, offsets, *blocker, blocker_neighbours,
                       alignment, total, tensor, Claim{spot, spot + size});
    if (moved) {
      offsets[tensor] = spot;
      offsets[*blocker] = *moved;
      return true;
    }
  }
  return false;
}

}  // namespace

uint64_t ImproveByLocalMoves(const std::vector<UsageRecord<>>& records,
                             uint64_t alignment, std::vector<uint64_t>& offsets,
                             std::chrono::steady_clock::time_point deadline,
                             const std::vector<uint8_t>& fixed) {
  internal::PlacedIntervalIndex index(records);
  for (size_t i = 0; i < records.size(); ++i) index.Place(i);
  uint64_t total = TotalSize(records, offsets);
  std::vector<size_t> neighbours;
  while (SolverClock::Now() < deadline) {
    bool all_moved = true;
    for (size_t i = 0; i < records.size() && all_moved; ++i) {
      if (records[i].tensor_size == 0 ||
          offsets[i] + records[i].tensor_size != total)
        continue;
      if (!fixed.empty() && fixed[i] != 0) {
        all_moved = false;  // the top is where a fixed tensor ends
        break;
      }
      SolverClock::Count();
      neighbours.clear();
      index.FindOverlapping(records[i].first_task, records[i].last_task,
                            neighbours);
      const std::optional<uint64_t> lower = LowestGapBelow(
          records, offsets, i, neighbours, alignment, total, i, std::nullopt);
      if (lower) {
        offsets[i] = *lower;
      } else {
        all_moved = LowerWithOneEjection(records, index, offsets, i, neighbours,
                                         alignment, total, fixed, deadline);
      }
    }
    if (!all_moved) break;
    total = TotalSize(records, offsets);
  }
  return TotalSize(records, offsets);
}

uint64_t TotalSize(const std::vector<UsageRecord<>>& records,
                   const std::vector<uint64_t>& offsets) {
  uint64_t total = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].tensor_size > 0)
      total = std::max(total, offsets[i] + records[i].tensor_size);
  }
  return total;
}

}  // namespace tensormem::solver_internal
