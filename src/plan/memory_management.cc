#include "tensormem/plan/memory_management.h"

#include "tensormem/plan/object_strategies.h"
#include "tensormem/plan/offset_strategies.h"

namespace tensormem {
namespace {

absl::Status Unsupported() {
  return absl::InternalError(
      "MemoryStrategy is not supported with current tensor size type.");
}

template <typename Extent>
absl::Status AssignTextures(const std::vector<UsageRecord<Extent>>& records,
                            MemoryStrategy strategy,
                            ObjectsAssignment<Extent>* assignment) {
  switch (strategy) {
    case MemoryStrategy::kNaive:
      *assignment = NaiveAssignment(records);
      return absl::OkStatus();
    case MemoryStrategy::kEquality:
      *assignment = EqualityAssignment(records);
      return absl::OkStatus();
    case MemoryStrategy::kGreedyInOrder:
      *assignment = GreedyInOrderAssignmentMultidimensional(records);
      return absl::OkStatus();
    default:
      return Unsupported();
  }
}

template <typename T>
absl::Status Store(absl::StatusOr<T> result, T* out) {
  if (!result.ok()) return result.status();
  *out = *std::move(result);
  return absl::OkStatus();
}

}  // namespace

absl::Status AssignObjectsToTensors(const std::vector<UsageRecord<>>& records,
                                    MemoryStrategy strategy,
                                    ObjectsAssignment<>* assignment,
                                    const UsageGraph* reallocation_graph) {
  switch (strategy) {
    case MemoryStrategy::kNaive:
      *assignment = NaiveAssignment(records);
      return absl::OkStatus();
    case MemoryStrategy::kEquality:
      *assignment = EqualityAssignmentWithHash(records);
      return absl::OkStatus();
    case MemoryStrategy::kGreedyInOrder:
      return Store(GreedyInOrderAssignment(records, reallocation_graph),
                   assignment);
    case MemoryStrategy::kGreedyByBreadth:
      return Store(GreedyByBreadthAssignment(records), assignment);
    case MemoryStrategy::kGreedyBySize:
      return Store(GreedyBySizeDistPriorityAssignment(records), assignment);
    case MemoryStrategy::kGreedyBest:
      return Store(BestGreedy(records), assignment);
    case MemoryStrategy::kMinCostFlow:
      *assignment = MinCostFlowAssignment(records);
      return absl::OkStatus();
  }
  return Unsupported();
}

absl::Status AssignObjectsToTensors(
    const std::vector<UsageRecord<Extent2>>& records, MemoryStrategy strategy,
    ObjectsAssignment<Extent2>* assignment,
    const UsageGraph* /*reallocation_graph*/) {
  return AssignTextures(records, strategy, assignment);
}

absl::Status AssignObjectsToTensors(
    const std::vector<UsageRecord<Extent3>>& records, MemoryStrategy strategy,
    ObjectsAssignment<Extent3>* assignment,
    const UsageGraph* /*reallocation_graph*/) {
  return AssignTextures(records, strategy, assignment);
}

absl::Status AssignOffsetsToTensors(const std::vector<UsageRecord<>>& records,
                                    MemoryStrategy strategy,
                                    OffsetsAssignment* assignment,
                                    uint64_t base_addr_align_bytes,
                                    const UsageGraph* reallocation_graph) {
  if (strategy == MemoryStrategy::kGreedyBySize) {
    return Store(GreedyBySizeOffsets(records, base_addr_align_bytes),
                 assignment);
  }
  ObjectsAssignment<> objects;
  absl::Status status =
      AssignObjectsToTensors(records, strategy, &objects, reallocation_graph);
  if (!status.ok()) return status;
  return Store(ObjectsToOffsets(objects), assignment);
}

}  // namespace tensormem
