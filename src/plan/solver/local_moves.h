// ImproveByLocalMoves: shrinks a valid placement by lowering the buffers that
// reach its top into free gaps further down.
//
// This is what the optimal planner does on sets too large to search (10^4 to
// 10^5 buffers): each round takes the buffers ending at the current total and
// moves each into the lowest aligned gap, among the buffers live at the same
// time, that ends below the total; when there is none, it looks for a lower
// spot blocked by a single neighbour that can itself move into a gap below
// the total, and moves both. A round in which every such buffer moved
// lowers the total; the first round in which one cannot move ends the work.
// Memory is O(n); each lookup costs O(log n + k log n) for k neighbours.
//
//   uint64_t total = ImproveByLocalMoves(records, 1, offsets, deadline);
#ifndef TENSORMEM_PLAN_SOLVER_LOCAL_MOVES_H_
#define TENSORMEM_PLAN_SOLVER_LOCAL_MOVES_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "tensormem/plan/usage_record.h"

namespace tensormem::solver_internal {

// The total size of a placement: the highest end of a non-empty buffer.
uint64_t TotalSize(const std::vector<UsageRecord<>>& records,
                   const std::vector<uint64_t>& offsets);

// `offsets` (one per record, aligned, valid) is updated in place and stays
// valid; returns its total size (max end). Records with a non-zero entry in
// `fixed` (empty, or one entry per record) never move.
uint64_t ImproveByLocalMoves(const std::vector<UsageRecord<>>& records,
                             uint64_t alignment, std::vector<uint64_t>& offsets,
                             std::chrono::steady_clock::time_point deadline,
                             const std::vector<uint8_t>& fixed = {});

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_LOCAL_MOVES_H_
