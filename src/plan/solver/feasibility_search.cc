#include "plan/solver/feasibility_search.h"

#include <algorithm>

#include "plan/solver/static_orders.h"
#include "tensormem/core/checked_math.h"

namespace tensormem::solver_internal {

const char* PruneRuleName(PruneRule rule) {
  switch (rule) {
    case PruneRule::kNone:
      return "none";
    case PruneRule::kWaiting:
      return "waiting buffers";
    case PruneRule::kSections:
      return "sections (staircase)";
    case PruneRule::kPlace:
      return "placement overfills";
    case PruneRule::kDominance:
      return "dominance";
    case PruneRule::kCanonical:
      return "canonical order (touching, rank)";
    case PruneRule::kHatless:
      return "hatless candidates";
    case PruneRule::kTwins:
      return "twins";
  }
  return "unknown";
}

FeasibilitySearch::FeasibilitySearch(const Problem& problem, int order,
                                     bool rerank_parts)
    : problem_(problem),
      order_(order),
      rerank_parts_(rerank_parts),
      rank_(StaticOrderRanks(problem, order)) {
  const size_t n = problem.buffers.size();
  // Each level either places a buffer or splits the list into smaller parts,
  // so the recursion is at most 2n + 1 deep; sizing the per-depth pools once
  // keeps references into them valid across recursive calls.
  child_lists_.resize(2 * n + 3);
  candidates_.resize(2 * n + 3);
  cuts_.resize(2 * n + 3);
  saved_ranks_.resize(2 * n + 3);
  contention_.resize(n);
  twins_ = SameLifetimeGroups(problem);
  twin_rank_ = rank_;
}

SearchOutcome FeasibilitySearch::Run(uint64_t capacity,
                                     const SearchLimits& limits) {
  capacity_ = capacity;
  padded_capacity_ =
      CheckedRoundUp(capacity, problem_.alignment).value_or(UINT64_MAX);
  limits_ = limits;
  nodes_ = 0;
  stopped_ = false;
  choices_.clear();
  choice_nodes_.clear();
  deepest_ = 0;
  deepest_rejection_ = PruneRule::kNone;
  const size_t n = problem_.buffers.size();
  floor_.assign(problem_.num_sections, 0);
  stacked_.assign(problem_.num_sections, 0);
  reach_.assign(n, 0);
  unplaced_bytes_ = problem_.section_total;
  lowest_offset_.assign(n, 0);
  offset_.assign(n, 0);
  placed_.assign(n, 0);
  unplaced_neighbours_.resize(n);
  for (size_t i = 0; i < n; ++i)
    unplaced_neighbours_[i] = problem_.overlaps[i].size();
  placements_.clear();
  floor_trail_.clear();
  raise_trail_.clear();
  if (problem_.peak_padded > padded_capacity_)
    return SearchOutcome::kInfeasible;
  for (const SolverBuffer& b : problem_.buffers) {
    if (b.size > capacity_) return SearchOutcome::kInfeasible;
  }
  return Search(problem_.by_start.data(), static_cast<int>(n), 0, -1, 0);
}

bool FeasibilitySearch::ShouldStop() {
  if (stopped_) return true;
  ++nodes_;
  if (nodes_ > limits_.node_limit) {
    if (limits_.pause) limits_.node_limit = limits_.pause(nodes_);
    if (nodes_ > limits_.node_limit) stopped_ = true;
  }
  // A node costs at least a microsecond, so a clock read every 16 is cheap
  // and keeps deadlines tight even on nodes of thousands of buffers.
  if ((nodes_ & 15) == 0) {
    if (limits_.stop != nullptr &&
        limits_.stop->load(std::memory_order_relaxed))
      stopped_ = true;
    if (limits_.cancel != nullptr &&
        limits_.cancel->load(std::memory_order_relaxed))
      stopped_ = true;
    if (std::chrono::steady_clock::now() >= limits_.deadline) stopped_ = true;
  }
  return stopped_;
}

SearchOutcome FeasibilitySearch::Reject(PruneRule rule) {
  if (static_cast<int>(placements_.size()) >= deepest_) {
    deepest_ = placements_.size();
    deepest_rejection_ = rule;
  }
  return SearchOutcome::kInfeasible;
}

SearchOutcome FeasibilitySearch::Search(const int* active, int count,
                                        uint64_t current_offset, int last_rank,
                                        int depth) {
  if (ShouldStop()) return SearchOutcome::kStopped;
  if (count == 0) return SearchOutcome::kFound;
  if (static_cast<int>(placements_.size()) > deepest_) {
    deepest_ = placements_.size();
    deepest_rejection_ = PruneRule::kNone;
  }
  const std::vector<SolverBuffer>& buffers = problem_.buffers;

  // Time cuts that no unplaced buffer spans split the work into independent
  // sub-problems. `active` is in start order, so one scan finds them.
  std::vector<int>& cuts = cuts_[depth];
  cuts.clear();
  int last_end = buffers[active[0]].section_end;
  for (int i = 1; i < count; ++i) {
    const SolverBuffer& b = buffers[active[i]];
    if (b.section_begin >= last_end) cuts.push_back(i);
    last_end = std::max(last_end, b.section_end);
  }
  if (!cuts.empty()) {
    return SearchComponents(active, cuts, count, current_offset, last_rank,
                            depth);
  }

  // reach_[u]: a lower bound on the offset u can still take. A buffer that
  // can no longer be placed at the current offset (below it, or tied there
  // with a lower rank) must wait until a neighbour placed later lifts it, so
  // it lands on top of one of those; with no unplaced neighbour left it never
  // can, and this branch is dead.
  // lowest_top: no buffer goes at or above the top some unplaced buffer
  // would have at its floor, since that one could then sink to its floor
  // (everything placed later sits higher). A buffer already fitting below
  // the current offset thus ends the branch: no candidate remains.
  uint64_t lowest_top = UINT64_MAX;
  for (int i = 0; i < count; ++i) {
    const int u = active[i];
    reach_[u] = std::max(current_offset, lowest_offset_[u]);
    lowest_top = std::min(lowest_top, lowest_offset_[u] + buffers[u].padded);
  }
  for (int i = 0; i < count; ++i) {
    const int u = active[i];
    const uint64_t lowest = lowest_offset_[u];
    if (lowest > current_offset ||
        (lowest == current_offset && rank_[u] > last_rank))
      continue;
    if (unplaced_neighbours_[u] == 0) return Reject(PruneRule::kWaiting);
    uint64_t landing = UINT64_MAX;
    for (const int v : problem_.overlaps[u]) {
      if (!placed_[v])
        landing = std::min(landing, reach_[v] + buffers[v].padded);
    }
    reach_[u] = std::max(reach_[u], landing);
  }
  // In every section, the unplaced buffers that can reach no lower than r
  // must all fit between r and the capacity, for every r. Taking buffers by
  // decreasing reach, a running sum per section checks all thresholds at once.
  // Every reach is at least the current offset, and at that threshold the
  // check is the sections' unplaced bytes (all of them are this part's, as
  // parts share no section): only buffers reaching higher need the running
  // sums, sorted as (reach, buffer) pairs.
  const int first_section = buffers[active[0]].section_begin;
  by_reach_.clear();
  for (int i = 0; i < count; ++i) {
    const int u = active[i];
    if (reach_[u] + buffers[u].size > capacity_)
      return Reject(PruneRule::kSections);
    if (reach_[u] > current_offset) by_reach_.emplace_back(reach_[u], u);
  }
  std::sort(by_reach_.begin(), by_reach_.end(),
            [](const auto& x, const auto& y) { return x.first > y.first; });
  uint64_t* stacked = stacked_.data();
  std::fill(stacked + first_section, stacked + last_end, 0);
  for (const auto& [lowest, u] : by_reach_) {
    const SolverBuffer& b = buffers[u];
    for (int s = b.section_begin; s < b.section_end; ++s) {
      stacked[s] += b.padded;
      if (lowest + stacked[s] > padded_capacity_)
        return Reject(PruneRule::kSections);
    }
  }
  for (int s = first_section; s < last_end; ++s) {
    if (current_offset + unplaced_bytes_[s] > padded_capacity_)
      return Reject(PruneRule::kSections);
  }
  std::vector<int>& candidates = candidates_[depth];
  candidates.clear();
  for (int i = 0; i < count; ++i) {
    const int u = active[i];
    if (CandidateRule(u, current_offset, last_rank, lowest_top,
                      /*use_guide=*/false) == PruneRule::kNone)
      candidates.push_back(u);
  }
  const bool guided_candidate_exists =
      guide_ == nullptr ||
      std::any_of(candidates.begin(), candidates.end(),
                  [&](int u) { return (*guide_)[u] == lowest_offset_[u]; });
  if (!guided_candidate_exists) {
    int next = active[0];  // the guide's next buffer in (offset, rank) order
    for (int i = 1; i < count; ++i) {
      const int u = active[i];
      if ((*guide_)[u] < (*guide_)[next] ||
          ((*guide_)[u] == (*guide_)[next] && rank_[u] < rank_[next]))
        next = u;
    }
    return Reject(CandidateRule(next, current_offset, last_rank, lowest_top,
                                /*use_guide=*/true));
  }
  // Lowest offset first: the tightest spot decides the most.
  std::sort(candidates.begin(), candidates.end(), [&](int a, int b) {
    return lowest_offset_[a] != lowest_offset_[b]
               ? lowest_offset_[a] < lowest_offset_[b]
               : rank_[a] < rank_[b];
  });

  std::vector<int>& child = child_lists_[depth];
  for (size_t position = 0; position < candidates.size(); ++position) {
    const int b = candidates[position];
    if (guide_ != nullptr && (*guide_)[b] != lowest_offset_[b]) continue;
    child.clear();
    for (int i = 0; i < count; ++i) {
      if (active[i] != b) child.push_back(active[i]);
    }
    const uint64_t offset = lowest_offset_[b];
    choices_.push_back(static_cast<int>(position));
    choice_nodes_.push_back(nodes_);
    if (Place(b, offset)) {
      const SearchOutcome outcome =
          Search(child.data(), count - 1, offset, rank_[b], depth + 1);
      if (outcome != SearchOutcome::kInfeasible) return outcome;
    } else {
      Reject(PruneRule::kPlace);
    }
    choices_.pop_back();
    choice_nodes_.pop_back();
    UndoLastPlacement();
    if (stopped_) return SearchOutcome::kStopped;
    // With no unplaced buffer live beside it, `b` sits at its final lowest
    // spot in every packing of the rest, so it precedes every later candidate
    // in (offset, rank) order: those branches would fail the same way.
    if (unplaced_neighbours_[b] == 0) {
      if (b != candidates.back()) Reject(PruneRule::kHatless);
      break;
    }
  }
  return SearchOutcome::kInfeasible;
}

SearchOutcome FeasibilitySearch::SearchComponents(const int* active,
                                                  const std::vector<int>& cuts,
                                                  int count,
                                                  uint64_t current_offset,
                                                  int last_rank, int depth) {
  const size_t mark = placements_.size();
  const size_t choices_mark = choices_.size();
  std::vector<std::pair<int, int>>& saved = saved_ranks_[depth];
  saved.clear();
  SearchOutcome outcome = SearchOutcome::kFound;
  int begin = 0;
  for (size_t c = 0; c <= cuts.size() && outcome == SearchOutcome::kFound;
       ++c) {
    const int end = c < cuts.size() ? cuts[c] : count;
    // Each part is a problem of its own: re-ranked by how full its sections
    // still are, it starts a fresh tie order (any rank is valid after the
    // offset of the last placement, which every part's packings respect).
    int part_last_rank = last_rank;
    if (rerank_parts_) {
      RerankPart(active + begin, end - begin, saved);
      part_last_rank = -1;
    }
    outcome = Search(active + begin, end - begin, current_offset,
                     part_last_rank, depth + 1);
    begin = end;
  }
  for (const auto& [buffer, rank] : saved) rank_[buffer] = rank;
  if (outcome != SearchOutcome::kFound) {
    UndoTo(mark);
    choices_.resize(choices_mark);
    choice_nodes_.resize(choices_mark);
  }
  return outcome;
}

void FeasibilitySearch::RerankPart(const int* part, int count,
                                   std::vector<std::pair<int, int>>& saved) {
  part_order_.assign(part, part + count);
  for (const int u : part_order_) {
    const SolverBuffer& b = problem_.buffers[u];
    uint64_t most = 0;
    // The height the section's unplaced bytes reach at least: plain unplaced
    // bytes would rank a nearly full section as slack (MiniMalloc's F takes
    // 371k nodes that way, 1k this way).
    for (int s = b.section_begin; s < b.section_end; ++s)
      most = std::max(most, floor_[s] + unplaced_bytes_[s]);
    contention_[u] = most;
    saved.emplace_back(u, rank_[u]);
  }
  SortIntoOrder(problem_, order_, contention_, part_order_.front(),
                part_order_);
  for (int position = 0; position < count; ++position)
    rank_[part_order_[position]] = position;
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
