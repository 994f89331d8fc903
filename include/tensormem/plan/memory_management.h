// TFLite-compatible entry points: pick a strategy by enum, as TFLite's GPU
// delegates do, including which size types support which strategy.
//
//   ObjectsAssignment<> objects;
//   TM_RETURN_IF_ERROR(AssignObjectsToTensors(
//       records, MemoryStrategy::kGreedyBest, &objects));
//   OffsetsAssignment offsets;
//   TM_RETURN_IF_ERROR(AssignOffsetsToTensors(
//       records, MemoryStrategy::kGreedyBySize, &offsets,
//       /*base_addr_align_bytes=*/64));
//
// The strategy registry (strategy_registry.h) is the richer interface used by
// the CLI; these functions exist so TFLite behaviour can be reproduced call
// for call.
#ifndef TENSORMEM_PLAN_MEMORY_MANAGEMENT_H_
#define TENSORMEM_PLAN_MEMORY_MANAGEMENT_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "tensormem/plan/reallocation_graph.h"
#include "tensormem/plan/usage_record.h"

namespace tensormem {

// In TFLite's ordinal order.
enum class MemoryStrategy {
  kNaive,
  kEquality,
  kGreedyInOrder,
  kGreedyByBreadth,
  kGreedyBySize,
  kGreedyBest,
  kMinCostFlow,
};

// Byte sizes support every strategy; `reallocation_graph` is used only by
// kGreedyInOrder. kEquality uses the hash (most recently released) version.
absl::Status AssignObjectsToTensors(
    const std::vector<UsageRecord<>>& records, MemoryStrategy strategy,
    ObjectsAssignment<>* assignment,
    const UsageGraph* reallocation_graph = nullptr);

// Textures support kNaive, kEquality (first-fit version) and kGreedyInOrder
// (multidimensional); any other strategy is an InternalError, as in TFLite.
absl::Status AssignObjectsToTensors(
    const std::vector<UsageRecord<Extent2>>& records, MemoryStrategy strategy,
    ObjectsAssignment<Extent2>* assignment,
    const UsageGraph* reallocation_graph = nullptr);
absl::Status AssignObjectsToTensors(
    const std::vector<UsageRecord<Extent3>>& records, MemoryStrategy strategy,
    ObjectsAssignment<Extent3>* assignment,
    const UsageGraph* reallocation_graph = nullptr);

// kGreedyBySize runs the offset planner, which honours the alignment. Every
// other strategy assigns objects and lays them back to back; as in TFLite the
// alignment is then ignored.
absl::Status AssignOffsetsToTensors(
    const std::vector<UsageRecord<>>& records, MemoryStrategy strategy,
    OffsetsAssignment* assignment, uint64_t base_addr_align_bytes = 1,
    const UsageGraph* reallocation_graph = nullptr);

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_MEMORY_MANAGEMENT_H_
