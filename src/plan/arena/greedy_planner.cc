// The greedy planner (current TFLite): lifetimes as closed node intervals,
// tensors sorted (whole-run first, then largest first), each placed in the
// tightest gap among the tensors it meets; outputs may reuse an input in place.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/plan/arena/arena_planner.h"

namespace tensormem {
namespace {

// Tensors this small are usually not yet resized (a placeholder), so sharing
// them would be guessed from a shape that is about to change.
constexpr size_t kScalarTensorBytes = 4;
constexpr int kMaxSharableInputs = 3;

bool Contains(const std::vector<int>& list, int value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

}  // namespace

absl::Status ArenaPlanner::PlanGreedy() {
  const ArenaGraph& g = *graph_;
  refcounts_.assign(g.tensors.size(), 0);
  auto allocate = [&](int node, int tensor) -> absl::Status {
    if (alloc_node_[tensor] != kNodeNotAssigned) return absl::OkStatus();
    if (dealloc_node_[tensor] != kNodeNotAssigned) {
      return absl::InternalError(absl::StrFormat(
          "tensor %d is produced by node %d after it was freed", tensor, node));
    }
    alloc_node_[tensor] = node;
    return absl::OkStatus();
  };
  for (int t : g.outputs) ++refcounts_[t];
  // Variables and inputs are allocated up front and never freed.
  for (int t : g.variables) {
    ++refcounts_[t];
    TM_RETURN_IF_ERROR(allocate(0, t));
    nodes_to_tensors_[0].insert(t);
  }
  for (int t : g.inputs) {
    if (t == kOptionalTensor) continue;
    ++refcounts_[t];
    TM_RETURN_IF_ERROR(allocate(0, t));
    nodes_to_tensors_[0].insert(t);
  }
  // `refcounts_` (consumers by tensor) decides sharing; `refcounts` (consumers
  // charged to the tensor owning the buffer) decides when buffers die.
  std::vector<int> refcounts = refcounts_;
  for (const ArenaNode& node : g.nodes) {
    for (int t : node.inputs) {
      if (t != kOptionalTensor) ++refcounts_[t];
    }
  }
  IdentifyInPlaceTensors();
  for (const ArenaNode& node : g.nodes) {
    for (int t : node.inputs) {
      if (t != kOptionalTensor) ++refcounts[SharedRoot(t)];
    }
  }
  for (int i = 0; i < NumNodes(); ++i) {
    const ArenaNode& node = g.nodes[i];
    for (int t : node.outputs) {
      if (t == kOptionalTensor) continue;
      nodes_to_tensors_[i].insert(t);
      TM_RETURN_IF_ERROR(allocate(i, t));
    }
    if (options_.preserve_all_tensors) continue;
    for (int input : node.inputs) {
      if (input == kOptionalTensor) continue;
      const int t = SharedRoot(input);
      if (--refcounts[t] == 0 && alloc_node_[t] != kNodeNotAssigned) {
        dealloc_node_[t] = i;
      }
    }
  }
  return absl::OkStatus();
}

bool ArenaPlanner::InputCanBeShared(int input, int output,
                                    bool tensor_changed) const {
  const ArenaTensor& in = graph_->tensors[input];
  const ArenaTensor& out = graph_->tensors[output];
  if (tensor_changed) {
    // The op overwrites the input, so nobody else may still need it.
    if (in.bytes != out.bytes || in.bytes <= kScalarTensorBytes) return false;
    if (refcounts_[input] > 1) return false;
  }
  if (Contains(graph_->inputs, input) || Contains(graph_->outputs, output)) {
    return false;
  }
  if (in.type != out.type && in.type != AllocationType::kArenaRw) return false;
  return !options_.preserve_all_tensors;
}

void ArenaPlanner::IdentifyInPlaceTensors() {
  for (const ArenaNode& node : graph_->nodes) {
    if (node.outputs.empty() || node.inplace.inputs.empty()) continue;
    const int output = node.outputs[0];
    if (output == kOptionalTensor) continue;
    const bool tensor_changed = !node.inplace.data_unmodified;
    int shared_input = -1;
    const int positions =
        std::min<int>(kMaxSharableInputs, static_cast<int>(node.inputs.size()));
    for (int k = 0; k < positions; ++k) {
      const int input = node.inputs[k];
      if (input == kOptionalTensor || !Contains(node.inplace.inputs, k)) {
        continue;
      }
      if (InputCanBeShared(input, output, tensor_changed)) {
        shared_input = input;
        break;
      }
    }
    if (shared_input == -1) continue;
    const int root = SharedRoot(shared_input);
    if (tensor_changed && refcounts_[root] > 1) continue;
    shared_root_[output] = root;
  }
}

void ArenaPlanner::SortForGreedy(std::vector<int>& tensors) const {
  auto whole_run = [&](int t) {
    return alloc_node_[t] == 0 && dealloc_node_[t] == kNodeNotAssigned;
  };
  std::sort(tensors.begin(), tensors.end(), [&](int a, int b) {
    if (whole_run(a) != whole_run(b)) return whole_run(a);
    if (whole_run(a)) return a < b;
    const size_t size_a = graph_->tensors[a].bytes;
    const size_t size_b = graph_->tensors[b].bytes;
    if (size_a != size_b) return size_a > size_b;
    if (alloc_node_[a] != alloc_node_[b])
      return alloc_node_[a] < alloc_node_[b];
    return a < b;  // TFLite leaves this order unspecified
  });
}

absl::Status ArenaPlanner::PlaceGreedy(int first_node, int last_node,
                                       std::vector<int>& placed) {
  const std::vector<ArenaTensor>& tensors = graph_->tensors;
  for (int i = first_node; i <= last_node; ++i) {
    for (int t : nodes_to_tensors_[i]) {
      if ((tensors[t].type == AllocationType::kArenaRw &&
           allocs_[t].size < tensors[t].bytes) ||
          tensors[t].type == AllocationType::kArenaRwPersistent) {
        placed.push_back(t);
      }
    }
  }
  if (placed.empty()) {
    last_active_node_ = last_node;
    return absl::OkStatus();
  }
  // Blocks placed for nodes at or after `first_node` are being redone; blocks
  // dead before it can no longer collide with anything.
  if (first_node < last_active_node_) {
    arena_.ResetAllocs();
  } else {
    arena_.PurgeActiveAllocs(first_node);
  }
  SortForGreedy(placed);
  for (int t : placed) {
    if (shared_root_[t] != -1) {
      const ArenaTensor& root = tensors[shared_root_[t]];
      // Sharing holds only while both stay same-sized main-arena tensors.
      // (TFLite also keeps it for a persistent output, leaving it null.)
      if (root.type == AllocationType::kArenaRw &&
          tensors[t].type == AllocationType::kArenaRw &&
          root.bytes == tensors[t].bytes) {
        shared_placed_[t] = true;
        continue;
      }
      shared_root_[t] = -1;
    }
    absl::StatusOr<ArenaAlloc> alloc;
    if (tensors[t].type == AllocationType::kArenaRw) {
      alloc = arena_.Allocate(tensors[t].bytes, options_.tensor_alignment, t,
                              alloc_node_[t], dealloc_node_[t]);
    } else if (tensors[t].type == AllocationType::kArenaRwPersistent &&
               allocs_[t].size == 0) {
      alloc = persistent_arena_.Allocate(tensors[t].bytes,
                                         options_.tensor_alignment, t,
                                         alloc_node_[t], kNodeNotAssigned);
    } else {
      continue;
    }
    if (!alloc.ok()) {
      return absl::Status(
          alloc.status().code(),
          absl::StrFormat("tensor %d (%d bytes): %s", t, tensors[t].bytes,
                          alloc.status().message()));
    }
    allocs_[t] = *alloc;
  }
  last_active_node_ = last_node;
  return absl::OkStatus();
}

absl::Status ArenaPlanner::ExecuteGreedy(int first_node, int last_node) {
  // Temporaries live during their own node only (or to the end when every
  // tensor is preserved); they may have been added since planning.
  for (int i = first_node; i <= last_node && i < NumNodes(); ++i) {
    for (int t : graph_->nodes[i].temporaries) {
      alloc_node_[t] = i;
      nodes_to_tensors_[i].insert(t);
      if (!options_.preserve_all_tensors) dealloc_node_[t] = i;
    }
  }
  std::vector<int> placed;
  TM_RETURN_IF_ERROR(PlaceGreedy(first_node, last_node, placed));
  bool moved = false;
  TM_RETURN_IF_ERROR(Commit(&moved));
  if (moved) {
    for (int i = 0; i < static_cast<int>(graph_->tensors.size()); ++i) {
      TM_RETURN_IF_ERROR(ResolveTensor(i));
    }
  } else {
    for (int t : placed) TM_RETURN_IF_ERROR(ResolveTensor(t));
  }
  return absl::OkStatus();
}

}  // namespace tensormem
