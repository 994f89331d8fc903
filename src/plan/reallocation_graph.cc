#include "tensormem/plan/reallocation_graph.h"

#include <algorithm>
#include <deque>

#include "absl/strings/str_format.h"

namespace tensormem {

absl::StatusOr<UsageGraph> ReallocationGraph(const UsageGraph& deps) {
  const size_t n = deps.size();
  for (size_t x = 0; x < n; ++x) {
    for (size_t child : deps[x]) {
      if (child >= n) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "deps[%d] names tensor %d, but there are only %d tensors", x, child,
            n));
      }
    }
  }
  UsageGraph graph(n);
  std::vector<size_t> num_visits(n);
  std::vector<bool> visited(n);
  std::deque<size_t> queue;
  for (size_t root = 0; root < n; ++root) {
    const std::vector<size_t>& children = deps[root];
    if (children.empty()) continue;
    std::fill(num_visits.begin(), num_visits.end(), 0);
    // One breadth-first search per child, each with its own visited set; the
    // child itself is not counted as reached.
    for (size_t child : children) {
      std::fill(visited.begin(), visited.end(), false);
      visited[child] = true;
      queue.assign(1, child);
      while (!queue.empty()) {
        const size_t vertex = queue.front();
        queue.pop_front();
        for (size_t next : deps[vertex]) {
          if (visited[next]) continue;
          visited[next] = true;
          ++num_visits[next];
          queue.push_back(next);
        }
      }
    }
    for (size_t v = 0; v < n; ++v) {
      if (num_visits[v] == children.size()) {
        graph[root].push_back(v);
        graph[v].push_back(root);
      }
    }
  }
  for (std::vector<size_t>& adjacent : graph)
    std::sort(adjacent.begin(), adjacent.end());
  return graph;
}

}  // namespace tensormem
