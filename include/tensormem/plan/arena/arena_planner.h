// ArenaPlanner: places every tensor of a graph in one arena buffer, the way
// TFLite's interpreter does before it runs a model.
//
// PlanAllocations derives each tensor's lifetime from reference counts (graph
// outputs and variables live forever, a tensor dies at its last consumer);
// ExecuteAllocations(first, last) then gives offsets to the tensors first used
// by nodes [first, last], commits the buffers and sets every tensor's `data`.
// Two planners, each bit-exact to a TFLite generation:
//
//  - kGreedy (current TFLite, the default): whole-run tensors first, then by
//    size (largest first), then first use, then tensor index; each placed in
//    the tightest gap among tensors whose lifetime it meets. Inputs are always
//    preserved; an output may reuse an input's buffer in place when its node
//    allows it. Buffer = high-water mark.
//  - kQueue (TFLite 2018-2020): allocations and frees replayed in execution
//    order, each new tensor in the tightest gap between live ones. Buffer =
//    high-water mark + 2 * arena alignment.
//
// Tensors of type kArenaRwPersistent get their own arena and are never
// reused; kMmapRo and kDynamic tensors get no arena space (data untouched).
//
//   TM_ASSIGN_OR_RETURN(  // the graph must outlive the planner
//       ArenaGraph graph,
//       ReadArenaGraphJson("tests/data/arena/simple_graph.json"));
//   const int num_nodes = static_cast<int>(graph.nodes.size());
//   absl::StatusOr<std::unique_ptr<ArenaPlanner>> planner =
//       ArenaPlanner::Create(&graph, {.planner = ArenaPlannerKind::kGreedy});
//   TM_RETURN_IF_ERROR(planner.status());
//   TM_RETURN_IF_ERROR((*planner)->PlanAllocations());
//   TM_RETURN_IF_ERROR((*planner)->ExecuteAllocations(0, num_nodes - 1));
//   // graph.tensors[i].data now points into the arena.
#ifndef TENSORMEM_PLAN_ARENA_ARENA_PLANNER_H_
#define TENSORMEM_PLAN_ARENA_ARENA_PLANNER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tensormem/plan/arena/arena_graph.h"
#include "tensormem/plan/arena/simple_memory_arena.h"

namespace tensormem {

enum class ArenaPlannerKind { kGreedy, kQueue };

std::string_view ArenaPlannerKindName(ArenaPlannerKind kind);  // "greedy"
std::optional<ArenaPlannerKind> ParseArenaPlannerKind(std::string_view name);

struct ArenaPlannerOptions {
  ArenaPlannerKind planner = ArenaPlannerKind::kGreedy;
  // Queue only: graph inputs (resp. all tensors) are never freed. Greedy
  // always preserves inputs and refuses preserve_intermediates.
  bool preserve_inputs = false;
  bool preserve_intermediates = false;
  // Greedy only: nothing is freed or shared, so every tensor keeps its value.
  bool preserve_all_tensors = false;
  size_t tensor_alignment = 64;  // power of two <= arena_alignment
  size_t arena_alignment = 64;   // alignment of each arena's base
  ArenaBufferCallbacks callbacks = HostArenaBufferCallbacks();
};

enum class ArenaId { kMain, kPersistent };

// Where one tensor lives, as planned.
struct TensorPlacement {
  ArenaId arena = ArenaId::kMain;
  size_t offset = 0;
  size_t size = 0;
  int32_t first_node = 0;  // lifetime, closed; kNodeNotAssigned = to the end
  int32_t last_node = kNodeNotAssigned;
  int shares_with = -1;  // the tensor whose buffer it reuses in place, if any
};

// One entry of the queue planner's event order ("+3" allocates tensor 3).
struct ArenaQueueEvent {
  int node;
  int tensor;
  bool allocate;
};

class ArenaPlanner {
 public:
  // Fails on options that do not fit the planner or bad alignments.
  static absl::StatusOr<std::unique_ptr<ArenaPlanner>> Create(
      ArenaGraph* graph, ArenaPlannerOptions options);

  // Resets everything and derives lifetimes (and in-place sharing) from the
  // graph, which must pass ValidateArenaGraph.
  absl::Status PlanAllocations();

  // Places the tensors first used by nodes [first_node, last_node] (an empty
  // range when last_node < first_node), commits the arenas and sets `data` of
  // the tensors placed (of all of them when a buffer moved). Tensors placed
  // by earlier calls keep their offsets. The queue planner refuses a range
  // that starts at or before a node it already executed (reset first).
  absl::Status ExecuteAllocations(int first_node, int last_node);

  // Forgets all offsets (buffers are kept for the next commit).
  absl::Status ResetAllocations();
  // Forgets the offsets of main-arena tensors first used after `node`, so
  // execution can resume at node + 1 (e.g. after a dynamic resize).
  absl::Status ResetAllocationsAfter(int node);

  // Frees the main arena's buffer (nulling its tensors) / gets it back.
  absl::Status ReleaseNonPersistentMemory();
  absl::Status AcquireNonPersistentMemory();
  bool HasNonPersistentMemory() const;

  // Base address of the arena holding tensors of `type`; 0 for other types.
  uintptr_t BasePointer(AllocationType type) const;

  // The planned place of `tensor`, or nullopt when it has none (not yet
  // executed, zero-size, or not an arena type).
  std::optional<TensorPlacement> Placement(int tensor) const;

  size_t high_water_mark() const { return arena_.high_water_mark(); }
  size_t persistent_high_water_mark() const {
    return persistent_arena_.high_water_mark();
  }
  size_t buffer_bytes() const { return arena_.buffer_size(); }
  size_t persistent_buffer_bytes() const {
    return persistent_arena_.buffer_size();
  }
  const ArenaGraph& graph() const { return *graph_; }
  const ArenaPlannerOptions& options() const { return options_; }
  // The queue planner's chronological alloc/free events (empty for greedy).
  std::vector<ArenaQueueEvent> QueueEvents() const { return queue_; }

 private:
  ArenaPlanner(ArenaGraph* graph, ArenaPlannerOptions options);

  int NumNodes() const { return static_cast<int>(graph_->nodes.size()); }
  absl::Status CheckGraphUnchanged() const;
  // Sizes the per-tensor vectors to the graph's (tensors may be appended).
  void GrowPerTensorState();
  absl::Status Commit(bool* moved);
  absl::Status ResolveTensor(int tensor);
  int SharedRoot(int tensor) const;

  // Queue planner (queue_planner.cc).
  void PlanQueue();
  absl::Status ExecuteQueue(int first_node, int last_node);
  absl::Status PlaceQueueTensor(int tensor, int node);
  absl::Status FreeQueueTensor(int tensor);
  absl::Status PlaceTemporaries(int node);
  absl::Status FreeTemporaries(int node);

  // Greedy planner (greedy_planner.cc).
  absl::Status PlanGreedy();
  void IdentifyInPlaceTensors();
  bool InputCanBeShared(int input, int output, bool tensor_changed) const;
  absl::Status ExecuteGreedy(int first_node, int last_node);
  absl::Status PlaceGreedy(int first_node, int last_node,
                           std::vector<int>& placed);
  void SortForGreedy(std::vector<int>& tensors) const;

  ArenaGraph* graph_;
  ArenaPlannerOptions options_;
  SimpleMemoryArena arena_;
  SimpleMemoryArena persistent_arena_;
  bool planned_ = false;
  int planned_nodes_ = 0;
  // Per tensor: its block, and its lifetime [alloc_node_, dealloc_node_].
  std::vector<ArenaAlloc> allocs_;
  std::vector<int32_t> alloc_node_;
  std::vector<int32_t> dealloc_node_;

  // Queue planner state.
  std::vector<ArenaQueueEvent> queue_;
  int executed_through_ = -1;  // last node whose events were replayed

  // Greedy planner state.
  std::vector<absl::btree_set<int>> nodes_to_tensors_;
  std::vector<int> refcounts_;
  std::vector<int> shared_root_;  // -1 or the tensor whose buffer is reused
  // Whether the sharing was confirmed when its tensor was executed.
  std::vector<bool> shared_placed_;
  int32_t last_active_node_ = kNodeNotAssigned;
  bool has_nonpersistent_memory_ = false;
};

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_ARENA_ARENA_PLANNER_H_
