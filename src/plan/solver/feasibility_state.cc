// FeasibilitySearch's bookkeeping: placing and undoing buffers, and the twins
// rule that Place's callers check.
#include "plan/solver/feasibility_search.h"

namespace tensormem::solver_internal {

// The other rules need only a packing where no buffer can sink alone; one
// minimising the sum of offset x size x (n - initial rank) is one, and keeps
// this rule: swapping twins out of its order (equal ones anywhere, unequal
// ones stacked directly) lowers that sum. Ranks set the direction, so the
// order's first tries stay allowed; padding could lift a real top too high.
bool FeasibilitySearch::BreaksTwinOrder(int u, uint64_t offset) const {
  const SolverBuffer& b = problem_.buffers[u];
  for (const int w : twins_[u]) {
    const SolverBuffer& other = problem_.buffers[w];
    // An equal twin ranked earlier must go below u, so before it.
    if (!placed_[w]) {
      if (other.size == b.size && twin_rank_[w] < twin_rank_[u]) return true;
      continue;
    }
    if (twin_rank_[w] < twin_rank_[u]) continue;
    if (other.size == b.size) return true;
    if (other.size == other.padded && b.size == b.padded &&
        offset_[w] + other.padded == offset)
      return true;
  }
  return false;
}

bool FeasibilitySearch::Place(int buffer, uint64_t offset) {
  const SolverBuffer& b = problem_.buffers[buffer];
  placements_.push_back({buffer, floor_trail_.size(), raise_trail_.size()});
  placed_[buffer] = 1;
  offset_[buffer] = offset;
  const uint64_t top = offset + b.padded;
  bool fits = true;
  for (int s = b.section_begin; s < b.section_end; ++s) {
    floor_trail_.push_back(floor_[s]);
    floor_[s] = top;
    unplaced_bytes_[s] -= b.padded;
    if (unplaced_bytes_[s] != 0 && top + unplaced_bytes_[s] > padded_capacity_)
      fits = false;
  }
  for (const int v : problem_.overlaps[buffer]) {
    --unplaced_neighbours_[v];
    if (placed_[v] || lowest_offset_[v] >= top) continue;
    raise_trail_.emplace_back(v, lowest_offset_[v]);
    lowest_offset_[v] = top;
    if (top + problem_.buffers[v].size > capacity_) fits = false;
  }
  return fits;
}

void FeasibilitySearch::UndoLastPlacement() {
  const PlacementRecord record = placements_.back();
  placements_.pop_back();
  const SolverBuffer& b = problem_.buffers[record.buffer];
  placed_[record.buffer] = 0;
  for (const int v : problem_.overlaps[record.buffer])
    ++unplaced_neighbours_[v];
  for (int s = b.section_begin; s < b.section_end; ++s) {
    floor_[s] = floor_trail_[record.floor_trail_start + (s - b.section_begin)];
    unplaced_bytes_[s] += b.padded;
  }
  floor_trail_.resize(record.floor_trail_start);
  while (raise_trail_.size() > record.raise_trail_start) {
    lowest_offset_[raise_trail_.back().first] = raise_trail_.back().second;
    raise_trail_.pop_back();
  }
}

void FeasibilitySearch::UndoTo(size_t placement_count) {
  while (placements_.size() > placement_count) UndoLastPlacement();
}

}  // namespace tensormem::solver_internal
