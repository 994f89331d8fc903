// Shared-object strategies: each tensor gets an object, and tensors whose
// lifetimes never meet may share one. They reproduce TFLite's GPU-delegate
// planners exactly (same object ids, same sizes, same tie-breaks); the rules
// are in docs/planners.md. None of them sorts its input: GreedyInOrder,
// Equality and MinCostFlow expect records ordered by first_task, as a model's
// execution order gives them.
//
//   std::vector<UsageRecord<>> records = {{16, 0, 1}, {8, 1, 2}, {64, 2, 3}};
//   TM_ASSIGN_OR_RETURN(ObjectsAssignment<> plan, BestGreedy(records));
//   uint64_t bytes = TotalSize(plan);
//
// Costs: Naive O(n); Equality and GreedyInOrder O(n log n); GreedyByBreadth
// O(P log P + n * objects) with P = segment-profile entries; GreedyBySize
// O(n^2 + n * objects); MinCostFlow O(n^2) edges and one shortest-path search
// per tensor. See docs/planners.md for measured times.
#ifndef TENSORMEM_PLAN_OBJECT_STRATEGIES_H_
#define TENSORMEM_PLAN_OBJECT_STRATEGIES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/plan/reallocation_graph.h"
#include "tensormem/plan/usage_record.h"

namespace tensormem {

// Tensor i gets object i of its own size.
template <typename Size>
ObjectsAssignment<Size> NaiveAssignment(
    const std::vector<UsageRecord<Size>>& records) {
  ObjectsAssignment<Size> assignment;
  for (size_t i = 0; i < records.size(); ++i) {
    assignment.object_ids.push_back(i);
    assignment.object_sizes.push_back(records[i].tensor_size);
  }
  return assignment;
}

// Reuse only between tensors of exactly equal size, first fit: the lowest-id
// object of that size released before the tensor's first task. Works for any
// size type with `==` (2-D / 3-D extents, tensor descriptors).
template <typename Size>
ObjectsAssignment<Size> EqualityAssignment(
    const std::vector<UsageRecord<Size>>& records) {
  ObjectsAssignment<Size> assignment;
  std::vector<TaskId>
      released_after;  // per object: last task of its last tensor
  for (const UsageRecord<Size>& record : records) {
    size_t chosen = kNotAssigned;
    for (size_t object = 0; object < released_after.size(); ++object) {
      if (released_after[object] < record.first_task &&
          assignment.object_sizes[object] == record.tensor_size) {
        chosen = object;
        break;
      }
    }
    if (chosen == kNotAssigned) {
      chosen = assignment.object_sizes.size();
      assignment.object_sizes.push_back(record.tensor_size);
      released_after.push_back(record.last_task);
    } else {
      released_after[chosen] = record.last_task;
    }
    assignment.object_ids.push_back(chosen);
  }
  return assignment;
}

// Equality with a pool per size: reuses the most recently released object of
// the tensor's exact size (LIFO). O(n log n).
ObjectsAssignment<> EqualityAssignmentWithHash(
    const std::vector<UsageRecord<>>& records);

// Walks records in order and gives each the released object closest in size
// (the smallest one at least as large wins a tie with a smaller one); objects
// grow to their largest tensor. With `reallocation_graph` (sorted adjacency
// lists indexed by record), an object may only go to a tensor adjacent to the
// object's last tensor, and on a tie in size difference the smaller object
// wins. Fails when the graph does not have one list per record.
absl::StatusOr<ObjectsAssignment<>> GreedyInOrderAssignment(
    const std::vector<UsageRecord<>>& records,
    const UsageGraph* reallocation_graph = nullptr);

// GreedyInOrder for textures: a released object is reused only if it covers
// the tensor in every dimension (closest element count wins, first released on
// ties); objects never grow.
template <typename Extent>
ObjectsAssignment<Extent> GreedyInOrderAssignmentMultidimensional(
    const std::vector<UsageRecord<Extent>>& records);

// Visits tasks by decreasing breadth (sum of live sizes) and assigns each
// task's unassigned tensors, largest first, to the best-fitting object free
// during their lifetime.
absl::StatusOr<ObjectsAssignment<>> GreedyByBreadthAssignment(
    const std::vector<UsageRecord<>>& records);

// Assigns tensors in order of positional-maximum rank, then closeness in time
// to an existing object, then size; each joins the object holding its nearest
// neighbour in time, or opens a new one.
absl::StatusOr<ObjectsAssignment<>> GreedyBySizeDistPriorityAssignment(
    const std::vector<UsageRecord<>>& records);

// The smaller of GreedyBySize and GreedyByBreadth; GreedyBySize on a tie.
absl::StatusOr<ObjectsAssignment<>> BestGreedy(
    const std::vector<UsageRecord<>>& records);

// Min-cost bipartite flow: each tensor either opens an object (cost: its size)
// or follows a released tensor (cost: how much it grows that object). Costs
// are 64-bit, so sizes above 2 GiB are exact.
ObjectsAssignment<> MinCostFlowAssignment(
    const std::vector<UsageRecord<>>& records);

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_OBJECT_STRATEGIES_H_
