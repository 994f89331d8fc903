#include "plan/solver/feasibility_search.h"

#include <algorithm>
#include <bit>

#include "plan/solver/solver_clock.h"
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
  // A reach below the capacity then fits beside the buffer index.
  index_bits_ =
      std::max(1, static_cast<int>(std::bit_width(problem_.buffers.size())));
  pack_reaches_ =
      index_bits_ < 64 && (padded_capacity_ >> (64 - index_bits_)) == 0;
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
  return Search({.active = problem_.by_start.data(),
                 .count = static_cast<int>(n),
                 .current_offset = 0,
                 .last_rank = -1,
                 .depth = 0});
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
    if (SolverClock::Now() >= limits_.deadline) stopped_ = true;
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

void FeasibilitySearch::NoteDepth() {
  if (static_cast<int>(placements_.size()) > deepest_) {
    deepest_ = placements_.size();
    deepest_rejection_ = PruneRule::kNone;
  }
}

SearchOutcome FeasibilitySearch::Search(Node node) {
  // A node's work grows with the buffers still to place (its checks scan
  // them): in counted time, a step per 16 of them.
  SolverClock::Count(1 + node.count / 16);
  if (ShouldStop()) return SearchOutcome::kStopped;
  if (node.count == 0) return SearchOutcome::kFound;
  NoteDepth();
  std::vector<int>& cuts = cuts_[node.depth];
  const int section_end = FindTimeCuts(node, cuts);
  if (!cuts.empty()) return SearchComponents(node, cuts);

  const uint64_t lowest_top = InitReaches(node);
  if (const PruneRule rule = RaiseWaitingReaches(node);
      rule != PruneRule::kNone)
    return Reject(rule);
  if (const PruneRule rule = CheckSections(node, section_end);
      rule != PruneRule::kNone)
    return Reject(rule);
  std::vector<int>& candidates = candidates_[node.depth];
  CollectCandidates(node, lowest_top, candidates);
  if (!HasGuidedCandidate(candidates))
    return Reject(GuideDeparture(node, lowest_top));
  SortCandidates(candidates);
  return TryCandidates(node, candidates);
}

// Time cuts that no unplaced buffer spans split the work into independent
// sub-problems. `active` is in start order, so one scan finds them.
int FeasibilitySearch::FindTimeCuts(Node node, std::vector<int>& cuts) const {
  const std::vector<SolverBuffer>& buffers = problem_.buffers;
  cuts.clear();
  int last_end = buffers[node.active[0]].section_end;
  for (int i = 1; i < node.count; ++i) {
    const SolverBuffer& b = buffers[node.active[i]];
    if (b.section_begin >= last_end) cuts.push_back(i);
    last_end = std::max(last_end, b.section_end);
  }
  return last_end;
}

SearchOutcome FeasibilitySearch::TryCandidates(
    Node node, const std::vector<int>& candidates) {
  for (size_t position = 0; position < candidates.size(); ++position) {
    const int b = candidates[position];
    if (guide_ != nullptr && (*guide_)[b] != lowest_offset_[b]) continue;
    const std::vector<int>& child = ChildList(node, b);
    const uint64_t offset = lowest_offset_[b];
    choices_.push_back(static_cast<int>(position));
    choice_nodes_.push_back(nodes_);
    if (Place(b, offset)) {
      const SearchOutcome outcome = Search({.active = child.data(),
                                            .count = node.count - 1,
                                            .current_offset = offset,
                                            .last_rank = rank_[b],
                                            .depth = node.depth + 1});
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

const std::vector<int>& FeasibilitySearch::ChildList(Node node, int buffer) {
  std::vector<int>& child = child_lists_[node.depth];
  child.clear();
  for (int i = 0; i < node.count; ++i) {
    if (node.active[i] != buffer) child.push_back(node.active[i]);
  }
  return child;
}

SearchOutcome FeasibilitySearch::SearchComponents(
    Node node, const std::vector<int>& cuts) {
  const size_t mark = placements_.size();
  const size_t choices_mark = choices_.size();
  std::vector<std::pair<int, int>>& saved = saved_ranks_[node.depth];
  saved.clear();
  SearchOutcome outcome = SearchOutcome::kFound;
  int begin = 0;
  for (size_t c = 0; c <= cuts.size() && outcome == SearchOutcome::kFound;
       ++c) {
    const int end = c < cuts.size() ? cuts[c] : node.count;
    // Each part is a problem of its own: re-ranked by how full its sections
    // still are, it starts a fresh tie order (any rank is valid after the
    // offset of the last placement, which every part's packings respect).
    int part_last_rank = node.last_rank;
    if (rerank_parts_) {
      RerankPart(node.active + begin, end - begin, saved);
      part_last_rank = -1;
    }
    outcome = Search({.active = node.active + begin,
                      .count = end - begin,
                      .current_offset = node.current_offset,
                      .last_rank = part_last_rank,
                      .depth = node.depth + 1});
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

}  // namespace tensormem::solver_internal
