// The parts of ArenaPlanner both planners share: options, execution ranges,
// commit, pointer resolution, resets and releasing memory. The planners
// themselves live in queue_planner.cc and greedy_planner.cc.
#include "tensormem/plan/arena/arena_planner.h"

#include "absl/strings/str_format.h"
#include "tensormem/core/checked_math.h"
#include "tensormem/core/status_macros.h"

namespace tensormem {

std::string_view ArenaPlannerKindName(ArenaPlannerKind kind) {
  return kind == ArenaPlannerKind::kGreedy ? "greedy" : "queue";
}

std::optional<ArenaPlannerKind> ParseArenaPlannerKind(std::string_view name) {
  if (name == "greedy") return ArenaPlannerKind::kGreedy;
  if (name == "queue") return ArenaPlannerKind::kQueue;
  return std::nullopt;
}

absl::StatusOr<std::unique_ptr<ArenaPlanner>> ArenaPlanner::Create(
    ArenaGraph* graph, ArenaPlannerOptions options) {
  if (graph == nullptr) return absl::InvalidArgumentError("graph is null");
  if (!IsPowerOfTwo(options.arena_alignment) ||
      !IsPowerOfTwo(options.tensor_alignment) ||
      options.tensor_alignment > options.arena_alignment) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor alignment %d and arena alignment %d must be powers of two, "
        "the tensor alignment no larger",
        options.tensor_alignment, options.arena_alignment));
  }
  if (options.planner == ArenaPlannerKind::kGreedy &&
      options.preserve_intermediates) {
    return absl::InvalidArgumentError(
        "preserve_intermediates belongs to the queue planner; the greedy "
        "planner keeps every tensor with preserve_all_tensors");
  }
  if (options.planner == ArenaPlannerKind::kQueue &&
      options.preserve_all_tensors) {
    return absl::InvalidArgumentError(
        "preserve_all_tensors belongs to the greedy planner; the queue "
        "planner uses preserve_inputs and preserve_intermediates");
  }
  return std::unique_ptr<ArenaPlanner>(
      new ArenaPlanner(graph, std::move(options)));
}

ArenaPlanner::ArenaPlanner(ArenaGraph* graph, ArenaPlannerOptions options)
    : graph_(graph),
      options_(std::move(options)),
      arena_({.generation = options_.planner == ArenaPlannerKind::kQueue
                                ? ArenaGeneration::kQueue
                                : ArenaGeneration::kGreedy,
              .arena_alignment = options_.arena_alignment,
              .callbacks = options_.callbacks}),
      persistent_arena_({.generation = arena_.generation(),
                         .arena_alignment = options_.arena_alignment,
                         .callbacks = options_.callbacks}) {}

void ArenaPlanner::GrowPerTensorState() {
  const size_t n = graph_->tensors.size();
  allocs_.resize(n);
  alloc_node_.resize(n, kNodeNotAssigned);
  dealloc_node_.resize(n, kNodeNotAssigned);
  shared_root_.resize(n, -1);
  shared_placed_.resize(n, false);
}

absl::Status ArenaPlanner::ResetAllocations() {
  arena_.ClearPlan();
  persistent_arena_.ClearPlan();
  allocs_.clear();
  shared_placed_.clear();
  GrowPerTensorState();
  last_active_node_ = kNodeNotAssigned;
  executed_through_ = -1;
  return absl::OkStatus();
}

absl::Status ArenaPlanner::PlanAllocations() {
  TM_RETURN_IF_ERROR(ValidateArenaGraph(*graph_));
  TM_RETURN_IF_ERROR(ResetAllocations());
  const size_t n = graph_->tensors.size();
  alloc_node_.assign(n, kNodeNotAssigned);
  dealloc_node_.assign(n, kNodeNotAssigned);
  shared_root_.assign(n, -1);
  queue_.clear();
  nodes_to_tensors_.assign(std::max(NumNodes(), 1), {});
  planned_nodes_ = NumNodes();
  planned_ = false;
  if (options_.planner == ArenaPlannerKind::kQueue) {
    PlanQueue();
  } else {
    TM_RETURN_IF_ERROR(PlanGreedy());
  }
  planned_ = true;
  return absl::OkStatus();
}

absl::Status ArenaPlanner::CheckGraphUnchanged() const {
  if (!planned_) {
    return absl::FailedPreconditionError(
        "PlanAllocations must succeed before allocations are executed");
  }
  if (NumNodes() != planned_nodes_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the graph has %d nodes but was planned with %d; plan again",
        NumNodes(), planned_nodes_));
  }
  if (graph_->tensors.size() < allocs_.size()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the graph lost tensors since planning (%d < %d); plan again",
        graph_->tensors.size(), allocs_.size()));
  }
  // Temporaries may have been added since planning; they must be valid too.
  return ValidateArenaGraph(*graph_);
}

absl::Status ArenaPlanner::ExecuteAllocations(int first_node, int last_node) {
  TM_RETURN_IF_ERROR(CheckGraphUnchanged());
  const int node_limit = std::max(NumNodes(), 1);
  if (first_node < 0 || (last_node >= first_node && last_node >= node_limit)) {
    return absl::OutOfRangeError(absl::StrFormat(
        "node range [%d, %d] is outside the graph's nodes [0, %d]", first_node,
        last_node, node_limit - 1));
  }
  GrowPerTensorState();
  return options_.planner == ArenaPlannerKind::kQueue
             ? ExecuteQueue(first_node, last_node)
             : ExecuteGreedy(first_node, last_node);
}

absl::Status ArenaPlanner::Commit(bool* moved) {
  TM_ASSIGN_OR_RETURN(const bool main_moved, arena_.Commit());
  has_nonpersistent_memory_ = true;
  TM_ASSIGN_OR_RETURN(const bool persistent_moved, persistent_arena_.Commit());
  *moved = main_moved || persistent_moved;
  return absl::OkStatus();
}

int ArenaPlanner::SharedRoot(int tensor) const {
  return shared_root_[tensor] == -1 ? tensor : shared_root_[tensor];
}

absl::Status ArenaPlanner::ResolveTensor(int tensor) {
  ArenaTensor& t = graph_->tensors[tensor];
  const int root = SharedRoot(tensor);
  if (root != tensor && t.type == graph_->tensors[root].type &&
      (t.type == AllocationType::kArenaRw ||
       t.type == AllocationType::kArenaRwPersistent)) {
    TM_RETURN_IF_ERROR(ResolveTensor(root));
    t.data = graph_->tensors[root].data;
    return absl::OkStatus();
  }
  if (t.type == AllocationType::kArenaRw && allocs_[tensor].size != 0) {
    TM_ASSIGN_OR_RETURN(t.data, arena_.Resolve(allocs_[tensor]));
  } else if (t.type == AllocationType::kArenaRwPersistent) {
    TM_ASSIGN_OR_RETURN(t.data, persistent_arena_.Resolve(allocs_[tensor]));
  }
  return absl::OkStatus();
}

absl::Status ArenaPlanner::ReleaseNonPersistentMemory() {
  arena_.ReleaseBuffer();
  has_nonpersistent_memory_ = false;
  for (ArenaTensor& t : graph_->tensors) {
    if (t.type == AllocationType::kArenaRw) t.data = nullptr;
  }
  return absl::OkStatus();
}

absl::Status ArenaPlanner::AcquireNonPersistentMemory() {
  TM_RETURN_IF_ERROR(arena_.Commit().status());
  has_nonpersistent_memory_ = true;
  const int n =
      static_cast<int>(std::min(graph_->tensors.size(), allocs_.size()));
  for (int i = 0; i < n; ++i) {
    if (graph_->tensors[i].type == AllocationType::kArenaRw) {
      TM_RETURN_IF_ERROR(ResolveTensor(i));
    }
  }
  return absl::OkStatus();
}

bool ArenaPlanner::HasNonPersistentMemory() const {
  // The queue generation asks the buffer; the greedy one keeps a flag.
  if (options_.planner == ArenaPlannerKind::kQueue) {
    return arena_.buffer_size() != 0;
  }
  return has_nonpersistent_memory_;
}

uintptr_t ArenaPlanner::BasePointer(AllocationType type) const {
  if (type == AllocationType::kArenaRw) {
    return reinterpret_cast<uintptr_t>(arena_.base());
  }
  if (type == AllocationType::kArenaRwPersistent) {
    return reinterpret_cast<uintptr_t>(persistent_arena_.base());
  }
  return 0;
}

absl::Status ArenaPlanner::ResetAllocationsAfter(int node) {
  if (!planned_) {
    return absl::FailedPreconditionError(
        "ResetAllocationsAfter before PlanAllocations");
  }
  for (size_t i = 0; i < allocs_.size() && i < graph_->tensors.size(); ++i) {
    ArenaTensor& t = graph_->tensors[i];
    if (allocs_[i].first_node > node && allocs_[i].size > 0 &&
        t.type == AllocationType::kArenaRw) {
      allocs_[i] = ArenaAlloc{};
      t.data = nullptr;
    }
    if (shared_placed_[i] && alloc_node_[i] > node) {
      shared_placed_[i] = false;
      t.data = nullptr;
    }
  }
  // The blocks new ones must avoid are the main-arena ones live at `node`
  // (persistent blocks live in the other arena and are kept).
  std::vector<ArenaAlloc> main_allocs;
  for (size_t i = 0; i < allocs_.size() && i < graph_->tensors.size(); ++i) {
    if (graph_->tensors[i].type == AllocationType::kArenaRw) {
      main_allocs.push_back(allocs_[i]);
    }
  }
  if (options_.planner == ArenaPlannerKind::kQueue) {
    arena_.RestoreAllocsAt(main_allocs, node);
    executed_through_ = std::min(executed_through_, node);
    return absl::OkStatus();
  }
  if (last_active_node_ > node) {
    arena_.RestoreAllocsAt(main_allocs, node);
  } else {
    arena_.PurgeAfter(node);
  }
  last_active_node_ = node;
  return absl::OkStatus();
}

std::optional<TensorPlacement> ArenaPlanner::Placement(int tensor) const {
  if (tensor < 0 || static_cast<size_t>(tensor) >= allocs_.size() ||
      static_cast<size_t>(tensor) >= graph_->tensors.size()) {
    return std::nullopt;
  }
  const AllocationType type = graph_->tensors[tensor].type;
  const int root = SharedRoot(tensor);
  if (root != tensor && shared_placed_[tensor]) {
    std::optional<TensorPlacement> placement = Placement(root);
    if (placement) placement->shares_with = root;
    return placement;
  }
  const ArenaAlloc& alloc = allocs_[tensor];
  if (alloc.size == 0) return std::nullopt;
  if (type == AllocationType::kArenaRw) {
    return TensorPlacement{.arena = ArenaId::kMain,
                           .offset = alloc.offset,
                           .size = alloc.size,
                           .first_node = alloc.first_node,
                           .last_node = alloc.last_node};
  }
  if (type == AllocationType::kArenaRwPersistent) {
    return TensorPlacement{.arena = ArenaId::kPersistent,
                           .offset = alloc.offset,
                           .size = alloc.size,
                           .first_node = alloc.first_node,
                           .last_node = kNodeNotAssigned};
  }
  return std::nullopt;
}

}  // namespace tensormem
