// The queue planner (TFLite 2018-2020): a chronological list of allocate and
// free events, replayed against an arena that takes the tightest gap.
#include "absl/strings/str_format.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/plan/arena/arena_planner.h"

namespace tensormem {

void ArenaPlanner::PlanQueue() {
  const ArenaGraph& g = *graph_;
  std::vector<int> refcounts(g.tensors.size(), 0);
  std::vector<bool> queued(g.tensors.size(), false);
  auto allocate = [&](int node, int tensor) {
    if (queued[tensor]) return;  // the first producer wins
    queue_.push_back({node, tensor, /*allocate=*/true});
    alloc_node_[tensor] = node;
    queued[tensor] = true;
  };
  auto deallocate = [&](int node, int tensor) {
    if (!queued[tensor]) return;  // never allocated, e.g. a constant
    queue_.push_back({node, tensor, /*allocate=*/false});
    dealloc_node_[tensor] = node;
  };
  // Outputs and variables must survive the run; so must inputs if asked.
  for (int t : g.outputs) ++refcounts[t];
  for (int t : g.variables) ++refcounts[t];
  for (int t : g.inputs) {
    if (t == kOptionalTensor) continue;
    if (options_.preserve_inputs) ++refcounts[t];
    allocate(0, t);
  }
  for (int t : g.variables) allocate(0, t);
  for (const ArenaNode& node : g.nodes) {
    for (int t : node.inputs) {
      if (t != kOptionalTensor) ++refcounts[t];
    }
  }
  for (int i = 0; i < NumNodes(); ++i) {
    const ArenaNode& node = g.nodes[i];
    for (int t : node.outputs) {
      if (t != kOptionalTensor) allocate(i, t);
    }
    if (options_.preserve_intermediates) continue;
    for (int t : node.inputs) {
      if (t != kOptionalTensor && --refcounts[t] == 0) deallocate(i, t);
    }
  }
}

absl::Status ArenaPlanner::PlaceQueueTensor(int tensor, int node) {
  const ArenaTensor& t = graph_->tensors[tensor];
  SimpleMemoryArena* arena = nullptr;
  if (t.type == AllocationType::kArenaRw) {
    arena = &arena_;
  } else if (t.type == AllocationType::kArenaRwPersistent &&
             allocs_[tensor].size == 0) {
    // A persistent tensor keeps its first slot when its node is replayed.
    arena = &persistent_arena_;
  }
  if (arena == nullptr) return absl::OkStatus();
  const int32_t last =
      arena == &persistent_arena_ ? kNodeNotAssigned : dealloc_node_[tensor];
  absl::StatusOr<ArenaAlloc> alloc =
      arena->Allocate(t.bytes, options_.tensor_alignment, tensor, node, last);
  if (!alloc.ok()) {
    return absl::Status(alloc.status().code(),
                        absl::StrFormat("tensor %d (%d bytes): %s", tensor,
                                        t.bytes, alloc.status().message()));
  }
  allocs_[tensor] = *alloc;
  return absl::OkStatus();
}

absl::Status ArenaPlanner::FreeQueueTensor(int tensor) {
  if (graph_->tensors[tensor].type != AllocationType::kArenaRw) {
    return absl::OkStatus();
  }
  return arena_.Deallocate(allocs_[tensor]);
}

absl::Status ArenaPlanner::PlaceTemporaries(int node) {
  if (node >= NumNodes()) return absl::OkStatus();
  for (int t : graph_->nodes[node].temporaries) {
    alloc_node_[t] = node;
    dealloc_node_[t] = node;
    TM_RETURN_IF_ERROR(PlaceQueueTensor(t, node));
  }
  return absl::OkStatus();
}

absl::Status ArenaPlanner::FreeTemporaries(int node) {
  if (node >= NumNodes()) return absl::OkStatus();
  for (int t : graph_->nodes[node].temporaries) {
    TM_RETURN_IF_ERROR(FreeQueueTensor(t));
  }
  return absl::OkStatus();
}

absl::Status ArenaPlanner::ExecuteQueue(int first_node, int last_node) {
  if (last_node >= first_node && first_node <= executed_through_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the queue planner already executed nodes up to %d; call "
        "ResetAllocationsAfter(%d) or ResetAllocations before executing from "
        "node %d",
        executed_through_, first_node - 1, first_node));
  }
  // Temporaries of a node are placed just before its first event and freed
  // just before the next node's first event. As in TFLite, the hand-over
  // happens only at a node that has events of its own: a node with none
  // stops temporaries from being placed for it and every later node.
  int active_node = first_node;
  for (const ArenaQueueEvent& event : queue_) {
    if (event.node < first_node) continue;
    if (event.node > last_node) break;
    if (event.node == active_node) {
      if (active_node != first_node) {
        TM_RETURN_IF_ERROR(FreeTemporaries(active_node - 1));
      }
      TM_RETURN_IF_ERROR(PlaceTemporaries(active_node));
      ++active_node;
    }
    TM_RETURN_IF_ERROR(event.allocate
                           ? PlaceQueueTensor(event.tensor, event.node)
                           : FreeQueueTensor(event.tensor));
  }
  // (TFLite also "frees" the previous call's temporaries again when this call
  // replayed no event, which fails; only what this call placed is freed.)
  if (active_node != first_node) {
    TM_RETURN_IF_ERROR(FreeTemporaries(active_node - 1));
  }
  if (last_node >= first_node) executed_through_ = last_node;

  bool moved = false;
  TM_RETURN_IF_ERROR(Commit(&moved));
  // Committing may move either base, so every tensor is resolved again.
  for (int i = 0; i < static_cast<int>(graph_->tensors.size()); ++i) {
    TM_RETURN_IF_ERROR(ResolveTensor(i));
  }
  return absl::OkStatus();
}

}  // namespace tensormem
