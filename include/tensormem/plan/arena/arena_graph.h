// ArenaGraph: what an inference runtime tells the arena planner about a model.
//
// Tensors carry a size, an allocation type and the data pointer the planner
// fills in; nodes (in execution order) list the tensors they read, write and
// use as scratch. The graph is plain data owned by the caller: between planner
// calls the caller may resize tensors, change their allocation type or append
// tensors (e.g. temporaries a kernel creates while it prepares), as a TFLite
// interpreter does.
//
//   ArenaGraph graph;
//   graph.tensors = {{.bytes = 1024}, {.bytes = 1024}, {.bytes = 4096}};
//   graph.inputs = {0};
//   graph.outputs = {2};
//   graph.nodes = {{.inputs = {0}, .outputs = {1}},
//                  {.inputs = {1}, .outputs = {2}}};
//   absl::Status valid = ValidateArenaGraph(graph);
//
// The JSON form (docs/design.md §3.3) is read by ReadArenaGraphJson and
// written by FormatArenaGraphJson.
#ifndef TENSORMEM_PLAN_ARENA_ARENA_GRAPH_H_
#define TENSORMEM_PLAN_ARENA_ARENA_GRAPH_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tensormem {

// Index of an absent optional tensor in a node's list or the graph inputs.
inline constexpr int kOptionalTensor = -1;

enum class AllocationType {
  kArenaRw,            // planned in the main arena, reused once dead
  kArenaRwPersistent,  // own arena, never freed until the plan is reset
  kMmapRo,             // read-only constant outside the arenas
  kDynamic,            // heap memory the kernel manages itself
};

// "arena_rw", "arena_rw_persistent", "mmap_ro", "dynamic".
std::string_view AllocationTypeName(AllocationType type);
std::optional<AllocationType> ParseAllocationType(std::string_view name);

struct ArenaTensor {
  size_t bytes = 0;
  AllocationType type = AllocationType::kArenaRw;
  // Set by the planner for arena tensors; left untouched for other types.
  char* data = nullptr;
};

// Which inputs of a node may share their buffer with its output 0.
struct InplaceSharing {
  // Input positions (0..2) allowed to share; empty = the node never shares.
  std::vector<int> inputs;
  // True for reshape-like ops that leave the bytes as they are: then the
  // input may be shared even if it is read elsewhere.
  bool data_unmodified = false;
};

struct ArenaNode {
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::vector<int> temporaries;
  InplaceSharing inplace;
};

struct ArenaGraph {
  std::vector<ArenaTensor> tensors;
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::vector<int> variables;
  std::vector<ArenaNode> nodes;  // execution order
};

// OK iff every index names a tensor (or is -1 where optional tensors are
// allowed: node inputs and outputs, graph inputs), no tensor is produced
// twice (as an output or temporary of two nodes, twice by one node, or by a
// node while also being a graph input or variable), and in-place positions are
// in 0..2. Errors name the list and the offending tensor index.
absl::Status ValidateArenaGraph(const ArenaGraph& graph);

// Parses the JSON graph format; `source` names the text in errors, which give
// the JSON location ("graph.json: /nodes/3/inputs/1: tensor 17 does not
// exist") or the parser's line and column. The result is validated.
absl::StatusOr<ArenaGraph> ParseArenaGraphJson(std::string_view text,
                                               std::string_view source);
absl::StatusOr<ArenaGraph> ReadArenaGraphJson(const std::string& path);

// The JSON form ParseArenaGraphJson reads back, one tensor and one node per
// line; default fields (arena_rw, no temporaries, no in-place) are left out.
std::string FormatArenaGraphJson(const ArenaGraph& graph);

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_ARENA_ARENA_GRAPH_H_
