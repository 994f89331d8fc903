#include <algorithm>
#include <limits>
#include <utility>

#include "plan/in_use_objects.h"
#include "tensormem/plan/object_strategies.h"

namespace tensormem {
namespace {

// The flow network: left vertex i (tensor i ends), right vertex n + i (tensor
// i starts), then source and sink. Edge e's residual twin is e ^ 1.
class FlowNetwork {
 public:
  explicit FlowNetwork(size_t num_tensors)
      : n_(num_tensors),
        source_(2 * n_),
        sink_(2 * n_ + 1),
        edges_from_(2 * n_ + 2) {}

  void Build(const std::vector<UsageRecord<>>& records) {
    internal::InUseObjects in_use;
    std::vector<size_t>
        released;  // tensors whose memory is free, in release order
    for (size_t i = 0; i < n_; ++i) {
      in_use.ReleaseBefore(records[i].first_task,
                           [&](size_t j) { released.push_back(j); });
      in_use.Add(records[i].last_task, i);
      AddEdge(source_, i, 0);
      AddEdge(Right(i), sink_, 0);
      AddEdge(source_, Right(i),
              static_cast<int64_t>(records[i].tensor_size));  // new object
      for (size_t j : released) {
        const uint64_t growth =
            records[i].tensor_size > records[j].tensor_size
                ? records[i].tensor_size - records[j].tensor_size
                : 0;
        AddEdge(j, Right(i),
                static_cast<int64_t>(growth));  // i reuses j's object
      }
    }
  }

  // Successive shortest paths: Bellman-Ford in level-synchronous rounds over
  // edges with residual capacity, one unit per path, until the sink is cut off.
  void Solve() {
    constexpr int64_t kUnreached = std::numeric_limits<int64_t>::max();
    const size_t num_vertices = sink_ + 1;
    std::vector<size_t> via_edge(num_vertices);
    std::vector<int64_t> distance(num_vertices);
    std::vector<size_t> queued_in_round(num_vertices);
    std::vector<size_t> current, next;
    while (true) {
      std::fill(distance.begin(), distance.end(), kUnreached);
      std::fill(queued_in_round.begin(), queued_in_round.end(), 0);
      size_t round = 1;
      current.assign(1, source_);
      queued_in_round[source_] = round;
      distance[source_] = 0;
      while (!current.empty()) {
        ++round;
        next.clear();
        for (size_t vertex : current) {
          for (size_t e : edges_from_[vertex]) {
            const Edge& edge = edges_[e];
            if (edge.capacity <= 0) continue;
            const int64_t candidate = distance[vertex] + edge.cost;
            if (candidate >= distance[edge.to]) continue;
            distance[edge.to] = candidate;
            via_edge[edge.to] = e;
            if (queued_in_round[edge.to] != round) {
              next.push_back(edge.to);
              queued_in_round[edge.to] = round;
            }
          }
        }
        std::swap(current, next);
      }
      if (distance[sink_] == kUnreached) return;
      for (size_t vertex = sink_; vertex != source_;) {
        --edges_[via_edge[vertex]].capacity;
        Edge& twin = edges_[via_edge[vertex] ^ 1];
        ++twin.capacity;
        vertex = twin.to;
      }
    }
  }

  // Each saturated source -> right(i) edge opens an object; the object then
  // follows saturated left(j) -> right(k) edges to the tensors reusing it.
  ObjectsAssignment<> Extract(const std::vector<UsageRecord<>>& records) const {
    ObjectsAssignment<> assignment;
    assignment.object_ids.assign(n_, kNotAssigned);
    for (size_t e : edges_from_[source_]) {
      const Edge& edge = edges_[e];
      if (edge.capacity != 0 || !IsRight(edge.to)) continue;
      const size_t object = assignment.object_sizes.size();
      uint64_t size = 0;
      for (size_t tensor = edge.to - n_; tensor != kNotAssigned;) {
        assignment.object_ids[tensor] = object;
        size = std::max(size, records[tensor].tensor_size);
        tensor = Successor(tensor, assignment);
      }
      assignment.object_sizes.push_back(size);
    }
    return assignment;
  }

 private:
  struct Edge {
    size_t to;
    int capacity;
    int64_t cost;
  };

  size_t Right(size_t tensor) const { return n_ + tensor; }
  bool IsRight(size_t vertex) const { return vertex >= n_ && vertex < 2 * n_; }

  void AddEdge(size_t from, size_t to, int64_t cost) {
    edges_from_[from].push_back(edges_.size());
    edges_.push_back({to, 1, cost});
    edges_from_[to].push_back(edges_.size());
    edges_.push_back({from, 0, -cost});
  }

  // The unassigned tensor that reuses `tensor`'s object next, if any. A left
  // vertex carries at most one unit of flow, so there is at most one.
  size_t Successor(size_t tensor, const ObjectsAssignment<>& assignment) const {
    for (size_t e : edges_from_[tensor]) {
      const Edge& edge = edges_[e];
      if (edge.capacity == 0 && IsRight(edge.to) &&
          assignment.object_ids[edge.to - n_] == kNotAssigned) {
        return edge.to - n_;
      }
    }
    return kNotAssigned;
  }

  size_t n_;
  size_t source_;
  size_t sink_;
  std::vector<Edge> edges_;
  std::vector<std::vector<size_t>> edges_from_;
};

}  // namespace

ObjectsAssignment<> MinCostFlowAssignment(
    const std::vector<UsageRecord<>>& records) {
  FlowNetwork network(records.size());
  network.Build(records);
  network.Solve();
  return network.Extract(records);
}

}  // namespace tensormem
