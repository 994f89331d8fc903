// FeasibilitySearch's pruning checks: the reaches of waiting buffers, the
// sections' staircase, and which buffers are candidates at a node.
#include <algorithm>
#include <functional>

#include "plan/solver/feasibility_search.h"

namespace tensormem::solver_internal {

// reach_[u]: a lower bound on the offset u can still take. A buffer that can
// no longer be placed at the current offset (below it, or tied there with a
// lower rank) must wait until a neighbour placed later lifts it, so it lands
// on top of one of those; with no unplaced neighbour left it never can, and
// this branch is dead.
// lowest_top: no buffer goes at or above the top some unplaced buffer would
// have at its floor, since that one could then sink to its floor (everything
// placed later sits higher). A buffer already fitting below the current
// offset thus ends the branch: no candidate remains.
uint64_t FeasibilitySearch::InitReaches(Node node) {
  const std::vector<SolverBuffer>& buffers = problem_.buffers;
  uint64_t lowest_top = UINT64_MAX;
  for (int i = 0; i < node.count; ++i) {
    const int u = node.active[i];
    reach_[u] = std::max(node.current_offset, lowest_offset_[u]);
    lowest_top = std::min(lowest_top, lowest_offset_[u] + buffers[u].padded);
  }
  return lowest_top;
}

PruneRule FeasibilitySearch::RaiseWaitingReaches(Node node) {
  for (int i = 0; i < node.count; ++i) {
    const int u = node.active[i];
    const uint64_t lowest = lowest_offset_[u];
    if (lowest > node.current_offset ||
        (lowest == node.current_offset && rank_[u] > node.last_rank))
      continue;
    if (unplaced_neighbours_[u] == 0) return PruneRule::kWaiting;
    reach_[u] = std::max(reach_[u], LandingReach(u));
  }
  return PruneRule::kNone;
}

uint64_t FeasibilitySearch::LandingReach(int u) const {
  // Raw pointers, loaded once: through the vectors the compiler reloads
  // their data on every neighbour (this loop is the search's hottest).
  const SolverBuffer* buffers = problem_.buffers.data();
  const uint64_t* reach = reach_.data();
  const char* placed = placed_.data();
  uint64_t landing = UINT64_MAX;
  for (const int v : problem_.overlaps[u]) {
    if (!placed[v]) landing = std::min(landing, reach[v] + buffers[v].padded);
  }
  return landing;
}

// In every section, the unplaced buffers that can reach no lower than r must
// all fit between r and the capacity, for every r. Taking buffers by
// decreasing reach, a running sum per section checks all thresholds at once
// (the order among equal reaches does not change the outcome: the last of
// them in a section sees the whole sum). Every reach is at least the current
// offset, and at that threshold the check is the sections' unplaced bytes
// (all of them are this part's, as parts share no section), checked first
// as it is cheap: only buffers reaching higher need the running sums.
PruneRule FeasibilitySearch::CheckSections(Node node, int section_end) {
  const std::vector<SolverBuffer>& buffers = problem_.buffers;
  const int first_section = buffers[node.active[0]].section_begin;
  for (int s = first_section; s < section_end; ++s) {
    if (node.current_offset + unplaced_bytes_[s] > padded_capacity_)
      return PruneRule::kSections;
  }
  by_reach_.clear();
  for (int i = 0; i < node.count; ++i) {
    const int u = node.active[i];
    if (reach_[u] + buffers[u].size > capacity_) return PruneRule::kSections;
    if (reach_[u] > node.current_offset)
      by_reach_.push_back(pack_reaches_ ? reach_[u] << index_bits_ | u : u);
  }
  SortByReach();
  const uint64_t index_mask = pack_reaches_ ? (1ull << index_bits_) - 1 : ~0ull;
  uint64_t* stacked = stacked_.data();
  std::fill(stacked + first_section, stacked + section_end, 0);
  for (const uint64_t key : by_reach_) {
    const int u = static_cast<int>(key & index_mask);
    const uint64_t lowest = reach_[u];
    const SolverBuffer& b = buffers[u];
    // lowest + size <= capacity (checked above), so this cannot wrap.
    const uint64_t room = padded_capacity_ - lowest;
    for (int s = b.section_begin; s < b.section_end; ++s) {
      stacked[s] += b.padded;
      if (stacked[s] > room) return PruneRule::kSections;
    }
  }
  return PruneRule::kNone;
}

// Keys (reach << index_bits_ | buffer) sort as plain integers, about twice
// as fast as (reach, buffer) pairs (this sort took a quarter of the search's
// CPU); capacities too large to pack fall back to sorting buffers by reach.
void FeasibilitySearch::SortByReach() {
  if (pack_reaches_) {
    std::sort(by_reach_.begin(), by_reach_.end(), std::greater<>());
  } else {
    std::sort(by_reach_.begin(), by_reach_.end(),
              [&](uint64_t x, uint64_t y) { return reach_[x] > reach_[y]; });
  }
}

void FeasibilitySearch::CollectCandidates(Node node, uint64_t lowest_top,
                                          std::vector<int>& candidates) const {
  candidates.clear();
  for (int i = 0; i < node.count; ++i) {
    const int u = node.active[i];
    if (CandidateRule(u, node.current_offset, node.last_rank, lowest_top,
                      /*use_guide=*/false) == PruneRule::kNone)
      candidates.push_back(u);
  }
}

bool FeasibilitySearch::HasGuidedCandidate(
    const std::vector<int>& candidates) const {
  return guide_ == nullptr ||
         std::any_of(candidates.begin(), candidates.end(),
                     [&](int u) { return (*guide_)[u] == lowest_offset_[u]; });
}

PruneRule FeasibilitySearch::GuideDeparture(Node node,
                                            uint64_t lowest_top) const {
  int next = node.active[0];
  for (int i = 1; i < node.count; ++i) {
    const int u = node.active[i];
    if ((*guide_)[u] < (*guide_)[next] ||
        ((*guide_)[u] == (*guide_)[next] && rank_[u] < rank_[next]))
      next = u;
  }
  return CandidateRule(next, node.current_offset, node.last_rank, lowest_top,
                       /*use_guide=*/true);
}

// The tightest spot decides the most.
void FeasibilitySearch::SortCandidates(std::vector<int>& candidates) const {
  std::sort(candidates.begin(), candidates.end(), [&](int a, int b) {
    return lowest_offset_[a] != lowest_offset_[b]
               ? lowest_offset_[a] < lowest_offset_[b]
               : rank_[a] < rank_[b];
  });
}

PruneRule FeasibilitySearch::CandidateRule(int u, uint64_t current_offset,
                                           int last_rank, uint64_t lowest_top,
                                           bool use_guide) const {
  const uint64_t lowest = lowest_offset_[u];
  // Touching (lowest >= current) and, at the current offset, after the last
  // placed buffer in rank (one order per packing); undominated (below
  // lowest_top); in guided mode, at its guide offset.
  if (lowest < current_offset ||
      (lowest == current_offset && rank_[u] < last_rank))
    return PruneRule::kCanonical;
  if (lowest >= lowest_top) return PruneRule::kDominance;
  if (BreaksTwinOrder(u, lowest)) return PruneRule::kTwins;
  if (use_guide && guide_ != nullptr && (*guide_)[u] != lowest)
    return PruneRule::kCanonical;
  return PruneRule::kNone;
}

}  // namespace tensormem::solver_internal
