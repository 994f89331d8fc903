#include <algorithm>
#include <list>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "plan/in_use_objects.h"
#include "tensormem/plan/object_strategies.h"

namespace tensormem {
namespace {

uint64_t ElementCount(const Extent2& e) { return uint64_t{e.x} * e.y; }
uint64_t ElementCount(const Extent3& e) { return uint64_t{e.x} * e.y * e.z; }
bool Covers(const Extent2& object, const Extent2& tensor) {
  return object.x >= tensor.x && object.y >= tensor.y;
}
bool Covers(const Extent3& object, const Extent3& tensor) {
  return object.x >= tensor.x && object.y >= tensor.y && object.z >= tensor.z;
}

// Released objects by (size, id).
using SizePool = std::set<std::pair<uint64_t, size_t>>;

// The plain rule: the smallest object at least as large, unless the largest
// smaller one is strictly closer in size.
SizePool::iterator ClosestInSize(SizePool& pool, uint64_t size) {
  auto larger = pool.lower_bound({size, 0});
  if (larger == pool.begin()) return larger;
  auto smaller = std::prev(larger);
  if (larger == pool.end() || size - smaller->first < larger->first - size)
    return smaller;
  return larger;
}

// The reallocation-graph rule: among objects whose last tensor may hand its
// memory to `tensor`, the closest in size; the first in (size, id) order on
// ties.
SizePool::iterator ClosestAllowed(
    SizePool& pool, uint64_t size, size_t tensor,
    const std::vector<size_t>& last_tensor_of_object, const UsageGraph& graph) {
  auto best = pool.end();
  uint64_t best_difference = UINT64_MAX;
  for (auto it = pool.begin(); it != pool.end(); ++it) {
    const std::vector<size_t>& allowed =
        graph[last_tensor_of_object[it->second]];
    if (!std::binary_search(allowed.begin(), allowed.end(), tensor)) continue;
    const uint64_t difference =
        it->first > size ? it->first - size : size - it->first;
    if (difference < best_difference) {
      best_difference = difference;
      best = it;
    }
  }
  return best;
}

}  // namespace

ObjectsAssignment<> EqualityAssignmentWithHash(
    const std::vector<UsageRecord<>>& records) {
  ObjectsAssignment<> assignment;
  internal::InUseObjects in_use;
  absl::flat_hash_map<uint64_t, std::vector<size_t>> released_by_size;
  for (const UsageRecord<>& record : records) {
    in_use.ReleaseBefore(record.first_task, [&](size_t object) {
      released_by_size[assignment.object_sizes[object]].push_back(object);
    });
    std::vector<size_t>& pool = released_by_size[record.tensor_size];
    size_t object;
    if (pool.empty()) {
      object = assignment.object_sizes.size();
      assignment.object_sizes.push_back(record.tensor_size);
    } else {
      object = pool.back();  // the most recently released
      pool.pop_back();
    }
    assignment.object_ids.push_back(object);
    in_use.Add(record.last_task, object);
  }
  return assignment;
}

absl::StatusOr<ObjectsAssignment<>> GreedyInOrderAssignment(
    const std::vector<UsageRecord<>>& records,
    const UsageGraph* reallocation_graph) {
  if (reallocation_graph != nullptr &&
      reallocation_graph->size() != records.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("reallocation graph has %d vertices for %d records",
                        reallocation_graph->size(), records.size()));
  }
  ObjectsAssignment<> assignment;
  internal::InUseObjects in_use;
  SizePool pool;
  std::vector<size_t> last_tensor_of_object;
  for (size_t i = 0; i < records.size(); ++i) {
    const UsageRecord<>& record = records[i];
    in_use.ReleaseBefore(record.first_task, [&](size_t object) {
      pool.emplace(assignment.object_sizes[object], object);
    });
    auto chosen =
        reallocation_graph == nullptr
            ? ClosestInSize(pool, record.tensor_size)
            : ClosestAllowed(pool, record.tensor_size, i, last_tensor_of_object,
                             *reallocation_graph);
    size_t object;
    if (chosen == pool.end()) {
      object = assignment.object_sizes.size();
      assignment.object_sizes.push_back(record.tensor_size);
      last_tensor_of_object.push_back(i);
    } else {
      object = chosen->second;
      pool.erase(chosen);
      assignment.object_sizes[object] =
          std::max(assignment.object_sizes[object], record.tensor_size);
      last_tensor_of_object[object] = i;
    }
    assignment.object_ids.push_back(object);
    in_use.Add(record.last_task, object);
  }
  return assignment;
}

template <typename Extent>
ObjectsAssignment<Extent> GreedyInOrderAssignmentMultidimensional(
    const std::vector<UsageRecord<Extent>>& records) {
  ObjectsAssignment<Extent> assignment;
  internal::InUseObjects in_use;
  std::list<size_t> pool;  // released objects, in release order
  for (const UsageRecord<Extent>& record : records) {
    in_use.ReleaseBefore(record.first_task,
                         [&](size_t object) { pool.push_back(object); });
    const uint64_t elements = ElementCount(record.tensor_size);
    auto best = pool.end();
    uint64_t best_difference = UINT64_MAX;
    for (auto it = pool.begin(); it != pool.end(); ++it) {
      const Extent& object_size = assignment.object_sizes[*it];
      if (!Covers(object_size, record.tensor_size)) continue;
      // Covering implies at least as many elements.
      const uint64_t difference = ElementCount(object_size) - elements;
      if (difference < best_difference) {
        best_difference = difference;
        best = it;
      }
    }
    size_t object;
    if (best == pool.end()) {
      object = assignment.object_sizes.size();
      assignment.object_sizes.push_back(record.tensor_size);
    } else {
      object = *best;
      pool.erase(best);
    }
    assignment.object_ids.push_back(object);
    in_use.Add(record.last_task, object);
  }
  return assignment;
}

template ObjectsAssignment<Extent2> GreedyInOrderAssignmentMultidimensional(
    const std::vector<UsageRecord<Extent2>>&);
template ObjectsAssignment<Extent3> GreedyInOrderAssignmentMultidimensional(
    const std::vector<UsageRecord<Extent3>>&);

}  // namespace tensormem
