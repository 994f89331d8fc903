// Fuzz target: the arena graph JSON reader, then both arena planners on what
// it accepts (small graphs only: the planners commit real buffers).
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "fuzz_check.h"
#include "tensormem/plan/arena/arena_graph.h"
#include "tensormem/plan/arena/arena_planner.h"

namespace {

constexpr uint64_t kMaxPlannedBytes = uint64_t{64} << 20;

bool SmallEnoughToCommit(const tensormem::ArenaGraph& graph) {
  uint64_t total = 0;
  for (const tensormem::ArenaTensor& tensor : graph.tensors) {
    if (tensor.bytes > kMaxPlannedBytes) return false;
    total += tensor.bytes;
  }
  return total <= kMaxPlannedBytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensormem;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<ArenaGraph> graph = ParseArenaGraphJson(text, "fuzz.json");
  if (!graph.ok()) {
    FUZZ_CHECK(absl::StartsWith(graph.status().message(), "fuzz.json"),
               "error does not name the input: %s",
               graph.status().ToString().c_str());
    return 0;
  }
  FUZZ_CHECK(ValidateArenaGraph(*graph).ok(), "accepted an invalid graph");
  if (!SmallEnoughToCommit(*graph)) return 0;
  for (ArenaPlannerKind kind :
       {ArenaPlannerKind::kGreedy, ArenaPlannerKind::kQueue}) {
    ArenaGraph copy = *graph;
    absl::StatusOr<std::unique_ptr<ArenaPlanner>> planner =
        ArenaPlanner::Create(&copy, {.planner = kind});
    if (!planner.ok()) continue;
    if (!(*planner)->PlanAllocations().ok()) continue;
    (void)(*planner)->ExecuteAllocations(
        0, static_cast<int>(copy.nodes.size()) - 1);
  }
  return 0;
}
