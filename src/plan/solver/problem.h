// Problem: a BufferSet prepared for the optimal planner's search.
//
// Time is compressed into sections (the intervals between consecutive distinct
// lifetime endpoints), so each buffer spans a contiguous range of sections and
// "live bytes in a section" is a plain sum. Zero-size buffers are dropped (they
// occupy no bytes and go at offset 0). Sizes are padded to the alignment, so
// every padded top of a buffer placed at an aligned offset is again aligned.
//
//   absl::StatusOr<Problem> problem = BuildProblem(set, /*alignment=*/1);
//   for (int other : problem->overlaps[0]) { ... }  // live with buffer 0
#ifndef TENSORMEM_PLAN_SOLVER_PROBLEM_H_
#define TENSORMEM_PLAN_SOLVER_PROBLEM_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/plan/buffer_set.h"

namespace tensormem::solver_internal {

struct SolverBuffer {
  int section_begin = 0;  // first section the buffer is live in
  int section_end = 0;    // one past its last section
  uint64_t size = 0;      // requested bytes (> 0)
  uint64_t padded = 0;    // size rounded up to the alignment
  int64_t duration = 0;   // upper - lower, in the input's time unit
};

struct Problem {
  std::vector<SolverBuffer> buffers;
  std::vector<int> source_index;  // buffers[i] is set.buffers[source_index[i]]
  int num_sections = 0;
  uint64_t alignment = 1;
  // Padded bytes live in each section (before anything is placed).
  std::vector<uint64_t> section_total;
  // Per buffer: the buffers live at the same time (built only on request,
  // since it is quadratic in the worst case).
  std::vector<std::vector<int>> overlaps;
  // Buffers in order of their first section (ties: by index); the search keeps
  // its lists in this order so that time cuts show up in one scan.
  std::vector<int> by_start;
  uint64_t peak_padded = 0;  // max over sections of section_total
  uint64_t peak_bytes = 0;   // the same with unpadded sizes: the lower bound
};

// Builds the problem; fails when the padded sizes sum beyond 2^63 bytes.
absl::StatusOr<Problem> BuildProblem(const BufferSet& set, uint64_t alignment);

// Number of (ordered) pairs of buffers live at the same time, computed without
// building the lists; lets callers bound memory before BuildOverlaps.
uint64_t CountOverlapPairs(const Problem& problem);

// Fills problem.overlaps.
void BuildOverlaps(Problem& problem);

// Per buffer: the other buffers live over exactly the same sections.
std::vector<std::vector<int>> SameLifetimeGroups(const Problem& problem);

// Moves buffers of a valid packing (`offsets` per problem buffer) to the
// lowest offset where each fits among the others, lowest first, until none
// moves: no buffer can then sink on its own (each rests on a neighbour or at
// 0), the form the search's canonical rules assume exists. Buffers of one
// lifetime are also put in the search's twin order for `twin_rank` (the
// order's initial ranks, StaticOrderRanks): equal ones in rank order, none
// directly under an earlier-ranked unpadded one. The total never grows.
// Needs the overlaps.
std::vector<uint64_t> PushDownPacking(const Problem& problem,
                                      std::vector<uint64_t> offsets,
                                      const std::vector<int>& twin_rank);

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_PROBLEM_H_
