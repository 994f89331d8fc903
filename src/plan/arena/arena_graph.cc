#include "tensormem/plan/arena/arena_graph.h"

#include <string>

#include "absl/strings/str_format.h"
#include "tensormem/core/status_macros.h"

namespace tensormem {
namespace {

// Checks that every entry of `list` names a tensor, allowing -1 when
// `optional_allowed`. `what` names the list in errors ("nodes[2].inputs").
absl::Status CheckIndices(const std::vector<int>& list, size_t num_tensors,
                          bool optional_allowed, const std::string& what) {
  for (size_t i = 0; i < list.size(); ++i) {
    const int tensor = list[i];
    if (tensor == kOptionalTensor && optional_allowed) continue;
    if (tensor < 0 || static_cast<size_t>(tensor) >= num_tensors) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s[%d] = %d: %s", what, i, tensor,
          tensor == kOptionalTensor
              ? "an optional tensor (-1) is not allowed here"
              : absl::StrFormat("no such tensor (the graph has %d)",
                                num_tensors)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view AllocationTypeName(AllocationType type) {
  switch (type) {
    case AllocationType::kArenaRw:
      return "arena_rw";
    case AllocationType::kArenaRwPersistent:
      return "arena_rw_persistent";
    case AllocationType::kMmapRo:
      return "mmap_ro";
    case AllocationType::kDynamic:
      return "dynamic";
  }
  return "unknown";
}

std::optional<AllocationType> ParseAllocationType(std::string_view name) {
  for (AllocationType type :
       {AllocationType::kArenaRw, AllocationType::kArenaRwPersistent,
        AllocationType::kMmapRo, AllocationType::kDynamic}) {
    if (AllocationTypeName(type) == name) return type;
  }
  return std::nullopt;
}

absl::Status ValidateArenaGraph(const ArenaGraph& graph) {
  const size_t n = graph.tensors.size();
  if (n > static_cast<size_t>(INT32_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d tensors: at most 2^31 - 1 are supported", n));
  }
  TM_RETURN_IF_ERROR(CheckIndices(graph.inputs, n, true, "inputs"));
  TM_RETURN_IF_ERROR(CheckIndices(graph.outputs, n, false, "outputs"));
  TM_RETURN_IF_ERROR(CheckIndices(graph.variables, n, false, "variables"));
  // Who produces each tensor, so a second producer can be named in the error.
  std::vector<std::string> producer(n);
  auto claim = [&](int tensor, const std::string& by) -> absl::Status {
    if (tensor == kOptionalTensor) return absl::OkStatus();
    std::string& owner = producer[tensor];
    if (!owner.empty() && owner != "graph inputs/variables") {
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor %d is listed by both %s and %s: a tensor may be produced "
          "only once",
          tensor, owner, by));
    }
    if (!owner.empty() && by != "graph inputs/variables") {
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor %d is a graph input or variable and also %s", tensor, by));
    }
    owner = by;
    return absl::OkStatus();
  };
  for (int t : graph.inputs) {
    TM_RETURN_IF_ERROR(claim(t, "graph inputs/variables"));
  }
  for (int t : graph.variables) {
    TM_RETURN_IF_ERROR(claim(t, "graph inputs/variables"));
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ArenaNode& node = graph.nodes[i];
    const std::string name = absl::StrFormat("nodes[%d]", i);
    TM_RETURN_IF_ERROR(CheckIndices(node.inputs, n, true, name + ".inputs"));
    TM_RETURN_IF_ERROR(CheckIndices(node.outputs, n, true, name + ".outputs"));
    TM_RETURN_IF_ERROR(
        CheckIndices(node.temporaries, n, false, name + ".temporaries"));
    for (int t : node.outputs) {
      TM_RETURN_IF_ERROR(claim(t, name + ".outputs"));
    }
    for (int t : node.temporaries) {
      TM_RETURN_IF_ERROR(claim(t, name + ".temporaries"));
    }
    for (int position : node.inplace.inputs) {
      if (position < 0 || position > 2) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s.inplace.inputs: position %d is not in 0..2", name, position));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace tensormem
