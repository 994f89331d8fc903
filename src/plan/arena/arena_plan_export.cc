#include "tensormem/plan/arena/arena_plan_export.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace tensormem {

BufferSet ArenaPlanToBufferSet(const ArenaPlanner& planner, ArenaId arena) {
  BufferSet set;
  set.convention = IntervalConvention::kClosed;
  const int64_t end = std::max<int64_t>(planner.graph().nodes.size(), 1);
  const int num_tensors = static_cast<int>(planner.graph().tensors.size());
  for (int t = 0; t < num_tensors; ++t) {
    std::optional<TensorPlacement> placement = planner.Placement(t);
    if (!placement || placement->arena != arena ||
        placement->shares_with != -1) {
      continue;
    }
    Buffer buffer;
    buffer.id = static_cast<uint64_t>(t);
    buffer.lower = placement->first_node;
    buffer.upper = placement->last_node == kNodeNotAssigned
                       ? std::max<int64_t>(end, buffer.lower + 1)
                       : int64_t{placement->last_node} + 1;
    buffer.size = placement->size;
    buffer.offset = placement->offset;
    set.buffers.push_back(buffer);
  }
  return set;
}

absl::StatusOr<ArenaGraph> ArenaGraphFromBufferSet(const BufferSet& set) {
  if (set.buffers.size() > static_cast<size_t>(INT32_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d buffers: a graph holds at most 2^31 - 1 tensors",
                        set.buffers.size()));
  }
  std::vector<int64_t> times;
  times.reserve(2 * set.buffers.size());
  for (const Buffer& b : set.buffers) {
    if (b.upper <= b.lower) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "buffer %d has an empty lifetime [%d, %d)", b.id, b.lower, b.upper));
    }
    times.push_back(b.lower);
    times.push_back(b.upper);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  auto rank = [&](int64_t time) {
    return static_cast<int>(std::lower_bound(times.begin(), times.end(), time) -
                            times.begin());
  };
  ArenaGraph graph;
  graph.nodes.resize(times.empty() ? 0 : times.size() - 1);
  for (size_t i = 0; i < set.buffers.size(); ++i) {
    const Buffer& b = set.buffers[i];
    graph.tensors.push_back({.bytes = b.size});
    const int tensor = static_cast<int>(i);
    graph.nodes[rank(b.lower)].outputs.push_back(tensor);
    graph.nodes[rank(b.upper) - 1].inputs.push_back(tensor);
  }
  return graph;
}

}  // namespace tensormem
