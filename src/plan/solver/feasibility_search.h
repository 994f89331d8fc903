// FeasibilitySearch: does a Problem fit in a given capacity? Depth-first search
// over canonical placements, the core of the optimal planner.
//
// A placement is built bottom-up in non-decreasing offset order; each buffer
// goes at its lowest feasible offset, which is the highest top of the placed
// buffers it overlaps in time (its "floor"). Every packing that fits can be
// pushed down into one such sequence, and ties at one offset are taken in
// static-order rank, so each packing is visited at most once. Pruning:
//   - sections (staircase): for every offset r, the unplaced buffers of a
//     section that cannot go below r must fit between r and the capacity
//     (no gap below a floor is usable any more);
//   - dominance: a buffer is only placed below the lowest top any unplaced
//     buffer would have at its floor, since that buffer could sink under it;
//   - a buffer may only go where it touches a placed buffer (or at 0), since
//     one floating above its floor could sink; one that can no longer do so
//     at the current offset must land on a neighbour placed later, or never;
//   - a failed candidate with no unplaced neighbour ends the node;
//   - twins (buffers of the same lifetime): equal ones are placed in the
//     order's initial rank order, and none lies directly under an
//     earlier-ranked one (swapping them lowers a weighted sum of offsets);
//   - when no unplaced buffer spans some time cut, the two sides are solved
//     as independent sub-problems (no backtracking across them), each
//     re-ranked by the bytes still unplaced in its sections (counted from
//     the sections' floors), with its own tie order.
//
// A guide (a known packing) restricts every node to the buffers that sit at
// their guide offset: with sound pruning the search then reaches a packing,
// so a rule that cuts a real solution shows up (deepest_rejection()).
//
//   FeasibilitySearch search(problem, /*order=*/0);
//   SearchLimits limits{.node_limit = 100000};
//   if (search.Run(1 << 20, limits) == SearchOutcome::kFound) {
//     use(search.offsets());
//   }
#ifndef TENSORMEM_PLAN_SOLVER_FEASIBILITY_SEARCH_H_
#define TENSORMEM_PLAN_SOLVER_FEASIBILITY_SEARCH_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "plan/solver/problem.h"

namespace tensormem::solver_internal {

enum class SearchOutcome {
  kFound,       // offsets() holds a placement within the capacity
  kInfeasible,  // the search was exhausted: no placement fits (a proof)
  kStopped,     // node limit, deadline or stop flag reached first
};

struct SearchLimits {
  uint64_t node_limit = UINT64_MAX;
  std::chrono::steady_clock::time_point deadline =
      std::chrono::steady_clock::time_point::max();
  const std::atomic<bool>* stop = nullptr;    // another thread asks to stop
  const std::atomic<bool>* cancel = nullptr;  // the caller gives up
  // Called when the node limit is reached (with the nodes so far): returns
  // the new limit, and the search goes on while it is above the nodes.
  std::function<uint64_t(uint64_t)> pause = nullptr;
};

// The rule that cut a branch (for soundness checks and diagnostics).
enum class PruneRule {
  kNone,
  kWaiting,    // a buffer below the current offset has no neighbour left
  kSections,   // a section's staircase of unplaced bytes overflows
  kPlace,      // placing the candidate overfilled a section or a neighbour
  kDominance,  // the guided buffer sat at or above some buffer's lowest top
  kCanonical,  // the guided buffer floats, or breaks the (offset, rank) order
  kHatless,    // a failed candidate without unplaced neighbours ended a node
  kTwins,      // out of order among buffers of one lifetime (see Twins)
};
const char* PruneRuleName(PruneRule rule);

class FeasibilitySearch {
 public:
  // `problem.overlaps` must be built. Candidates are tried in the rank order
  // StaticOrderRanks(problem, order), which also breaks offset ties; with
  // `rerank_parts`, each independent part gets its own order (same keys,
  // contention = floor + unplaced bytes of its sections).
  FeasibilitySearch(const Problem& problem, int order,
                    bool rerank_parts = true);

  // Restricts the search to buffers at these offsets (per problem buffer),
  // which must form a valid packing; null lifts it. The pointer must outlive
  // Run.
  void set_guide(const std::vector<uint64_t>* guide) { guide_ = guide; }

  // Searches for a placement whose every buffer ends at or below `capacity`.
  SearchOutcome Run(uint64_t capacity, const SearchLimits& limits);

  // Offsets per problem buffer; meaningful after Run returned kFound.
  const std::vector<uint64_t>& offsets() const { return offset_; }
  // Search nodes visited by the last Run.
  uint64_t nodes() const { return nodes_; }
  // Most buffers placed at once during the last Run, and the rule that last
  // cut a branch at that depth.
  int deepest() const { return deepest_; }
  PruneRule deepest_rejection() const { return deepest_rejection_; }
  // After kFound: per placement, the position of the placed buffer among its
  // node's candidates (0: the first one tried). With a guide, positions are
  // among the unguided candidates, so they show where the guide's packing
  // departs from what the order would try first.
  const std::vector<int>& choices() const { return choices_; }
  // After kFound: per placement, the node count when its branch began (the
  // nodes between consecutive entries went into failed siblings).
  const std::vector<uint64_t>& choice_nodes() const { return choice_nodes_; }

 private:
  struct PlacementRecord {
    int buffer;
    size_t floor_trail_start;
    size_t raise_trail_start;
  };

  // One search node: the unplaced buffers of one part (in start order), the
  // offset and rank of the last placement, and the recursion depth (which
  // picks the node's scratch lists). Passed by value: a copy of its own lets
  // the compiler keep the fields in registers across the stores of the loops.
  struct Node {
    const int* active;
    int count;
    uint64_t current_offset;
    int last_rank;
    int depth;
  };

  // The depth-first step (feasibility_search.cc): prune the node, else try
  // its candidates. Search and TryCandidates form the recursion: a third
  // function in it (one call per candidate) cost 1-2% CPU on the deep
  // searches of the challenging sets.
  SearchOutcome Search(Node node);
  // Solves the parts between `cuts` one after another (no backtracking
  // across them); undoes them all unless every part fits.
  SearchOutcome SearchComponents(Node node, const std::vector<int>& cuts);
  // Places each candidate in turn at its floor and searches the rest,
  // undoing the placement unless that search found a packing or stopped.
  SearchOutcome TryCandidates(Node node, const std::vector<int>& candidates);
  // node.active without `buffer`, in this depth's scratch list.
  const std::vector<int>& ChildList(Node node, int buffer);
  // Records the depth reached, for deepest().
  void NoteDepth();
  // Fills `cuts` with the positions in node.active where a new part starts
  // (no unplaced buffer spans the cut); returns the end of the node's last
  // section.
  int FindTimeCuts(Node node, std::vector<int>& cuts) const;

  // The pruning checks (feasibility_pruning.cc), in the order Search runs
  // them. Sets reach_ of the node's buffers to their lowest offsets; returns
  // the lowest top any of them would have there.
  uint64_t InitReaches(Node node);
  // Raises the reach of the buffers that must wait for a neighbour; kWaiting
  // when one has no unplaced neighbour left.
  PruneRule RaiseWaitingReaches(Node node);
  // The lowest top among the unplaced neighbours of `u`, each at its reach:
  // where `u`, waiting, can land at the earliest.
  uint64_t LandingReach(int u) const;
  // kSections when some section's unplaced buffers cannot all fit between
  // their reaches and the capacity.
  PruneRule CheckSections(Node node, int section_end);
  // Sorts by_reach_ by decreasing reach.
  void SortByReach();
  // The node's candidates, in start order (not yet sorted).
  void CollectCandidates(Node node, uint64_t lowest_top,
                         std::vector<int>& candidates) const;
  bool HasGuidedCandidate(const std::vector<int>& candidates) const;
  // With a guide and no guided candidate: the rule that keeps the guide's
  // next buffer (in (offset, rank) order) from being a candidate.
  PruneRule GuideDeparture(Node node, uint64_t lowest_top) const;
  // Lowest offset first, then rank.
  void SortCandidates(std::vector<int>& candidates) const;

  // Places `buffer` at `offset`; false when this already overfills a section
  // or lifts a neighbour past the capacity (the caller then undoes it).
  bool Place(int buffer, uint64_t offset);
  void UndoLastPlacement();
  void UndoTo(size_t placement_count);
  bool ShouldStop();
  SearchOutcome Reject(PruneRule rule);
  // Gives the buffers of `part` ranks 0.. in this search's order, keyed by
  // their unplaced contention; the old ranks go to `saved`.
  void RerankPart(const int* part, int count,
                  std::vector<std::pair<int, int>>& saved);
  // Which rule keeps `u` from being a candidate (kNone: it is one).
  // Without `use_guide`, the guide's offsets are ignored.
  PruneRule CandidateRule(int u, uint64_t current_offset, int last_rank,
                          uint64_t lowest_top, bool use_guide) const;

  // Whether placing `u` at `offset` breaks the twins rule.
  bool BreaksTwinOrder(int u, uint64_t offset) const;

  const Problem& problem_;
  const int order_;
  const bool rerank_parts_;
  std::vector<int> rank_;
  // Per buffer: the other buffers live over exactly the same sections, and
  // the initial ranks that order them (kept through re-ranking).
  std::vector<std::vector<int>> twins_;
  std::vector<int> twin_rank_;
  const std::vector<uint64_t>* guide_ = nullptr;
  int deepest_ = 0;
  PruneRule deepest_rejection_ = PruneRule::kNone;
  uint64_t capacity_ = 0;
  uint64_t padded_capacity_ = 0;
  SearchLimits limits_;
  uint64_t nodes_ = 0;
  bool stopped_ = false;
  std::vector<int> choices_;            // per placement on the current path
  std::vector<uint64_t> choice_nodes_;  // the same: nodes_ when it began

  std::vector<uint64_t> floor_;  // per section: top of the placed buffers
  std::vector<uint64_t>
      unplaced_bytes_;  // per section: padded bytes not yet placed
  std::vector<uint64_t>
      lowest_offset_;  // per buffer: max floor over its sections
  std::vector<uint64_t>
      stacked_;  // per section: bytes reaching no lower (scratch)
  std::vector<uint64_t> reach_;  // per buffer: lowest offset left (scratch)
  std::vector<uint64_t> offset_;
  std::vector<char> placed_;
  std::vector<int>
      unplaced_neighbours_;  // per buffer: unplaced buffers live with it
  std::vector<PlacementRecord> placements_;
  std::vector<uint64_t> floor_trail_;
  std::vector<std::pair<int, uint64_t>> raise_trail_;
  std::vector<std::vector<int>> child_lists_;  // per depth, reused
  std::vector<std::vector<int>> candidates_;   // per depth, reused
  std::vector<std::vector<int>> cuts_;         // per depth, reused
  // Scratch for one node's section check: buffers reaching above the
  // current offset, packed as reach << index_bits_ | buffer when
  // pack_reaches_ (every reach then fits), else plain buffer indices.
  std::vector<uint64_t> by_reach_;
  int index_bits_ = 1;
  bool pack_reaches_ = false;
  std::vector<std::vector<std::pair<int, int>>> saved_ranks_;  // per depth
  std::vector<int> part_order_;       // scratch for RerankPart
  std::vector<uint64_t> contention_;  // per buffer: scratch for RerankPart
};

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_FEASIBILITY_SEARCH_H_
