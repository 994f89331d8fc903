// Which tensors may share memory under any parallel execution order.
//
// `deps[x]` lists the intermediate tensors computed directly from tensor x.
// Tensor v may reuse root r's memory whatever the schedule when every child
// of r reaches v: then v is computed only after all of r's readers ran. The
// result is an undirected graph with sorted adjacency lists, the input of
// GreedyInOrderAssignment's reallocation variant.
//
//   TM_ASSIGN_OR_RETURN(UsageGraph graph, ReallocationGraph({{1}, {2}, {}}));
//   // graph == {{2}, {}, {0}}
#ifndef TENSORMEM_PLAN_REALLOCATION_GRAPH_H_
#define TENSORMEM_PLAN_REALLOCATION_GRAPH_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"

namespace tensormem {

// Adjacency lists indexed by usage-record index.
using UsageGraph = std::vector<std::vector<size_t>>;

// Fails when `deps` names a tensor index outside [0, deps.size()).
absl::StatusOr<UsageGraph> ReallocationGraph(const UsageGraph& deps);

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_REALLOCATION_GRAPH_H_
