// ModelGraph to the planners' inputs, and the small parsers around loading.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "tensormem/model/onnx_model.h"

namespace tensormem {

absl::StatusOr<InputShape> ParseInputShape(std::string_view text) {
  const size_t equals = text.rfind('=');
  const auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "input shape '%s': %s (expected name=1x3x224x224)", text, why));
  };
  if (equals == std::string_view::npos || equals == 0)
    return bad("no name= before the dimensions");
  InputShape shape;
  shape.name = std::string(text.substr(0, equals));
  const std::string_view dims = text.substr(equals + 1);
  if (dims.empty()) return shape;  // a scalar
  for (absl::string_view dim :
       absl::StrSplit(absl::string_view(dims.data(), dims.size()),
                      absl::ByAnyChar("x,"))) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(dim, &value) || value < 0) {
      return bad(
          absl::StrFormat("'%s' is not a dimension (an integer >= 0)", dim));
    }
    shape.dims.push_back(value);
  }
  return shape;
}

BufferSet ModelBufferSet(const ModelGraph& model) {
  BufferSet set;
  set.convention = IntervalConvention::kClosed;
  for (size_t i = 0; i < model.buffers.size(); ++i) {
    const ModelBuffer& buffer = model.buffers[i];
    Buffer& added = set.buffers.emplace_back();
    added.id = i;
    added.lower = buffer.first_node;
    added.upper = buffer.last_node + 1;
    added.size = buffer.bytes;
  }
  return set;
}

ArenaGraph ModelArenaGraph(const ModelGraph& model) {
  ArenaGraph graph;
  std::vector<int> arena_index(model.tensors.size(), -1);
  for (const ModelBuffer& buffer : model.buffers) {
    graph.tensors.push_back({.bytes = buffer.bytes});
    for (int t : buffer.tensors)
      arena_index[t] = static_cast<int>(graph.tensors.size()) - 1;
  }
  for (int t : model.inputs) {
    arena_index[t] = static_cast<int>(graph.tensors.size());
    graph.inputs.push_back(arena_index[t]);
    graph.tensors.push_back({.bytes = model.tensors[t].bytes});
  }
  for (size_t t = 0; t < model.tensors.size(); ++t) {
    if (model.tensors[t].role != ModelTensorRole::kParameter) continue;
    arena_index[t] = static_cast<int>(graph.tensors.size());
    graph.tensors.push_back(
        {.bytes = model.tensors[t].bytes, .type = AllocationType::kMmapRo});
  }
  const auto map = [&](int t) {
    return t < 0 ? kOptionalTensor : arena_index[t];
  };
  for (const ModelNode& node : model.nodes) {
    ArenaNode arena_node;
    for (int t : node.inputs) arena_node.inputs.push_back(map(t));
    // A fused activation writes into the buffer it reads: nothing new.
    if (!node.in_place) {
      for (int t : node.outputs) arena_node.outputs.push_back(map(t));
    }
    graph.nodes.push_back(std::move(arena_node));
  }
  for (size_t b = 0; b < model.buffers.size(); ++b) {
    if (model.buffers[b].graph_output)
      graph.outputs.push_back(static_cast<int>(b));
  }
  return graph;
}

}  // namespace tensormem
