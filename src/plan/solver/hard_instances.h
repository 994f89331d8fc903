// Hard feasibility instances for the optimal planner, in the style of
// MiniMalloc's challenging sets: a time x memory rectangle (by default 1 MiB
// of memory over 1,048,576 time steps, on a grid of 1,024) cut into random
// rectangles (guillotine cuts, in time or in memory), then thinned by
// removing some of them. A few time
// columns are never thinned, so their sections stay exactly full: the peak of
// live bytes, the lower bound, equals the capacity, and the set is known to
// fit (the tiling is returned with it).
//
//   HardInstance hard = MakeHardInstance(/*seed=*/7, {});
//   PlanOptimal(hard.set, {.capacity = hard.capacity, ...});
#ifndef TENSORMEM_PLAN_SOLVER_HARD_INSTANCES_H_
#define TENSORMEM_PLAN_SOLVER_HARD_INSTANCES_H_

#include <cstdint>
#include <vector>

#include "tensormem/plan/buffer_set.h"

namespace tensormem::solver_internal {

struct HardInstanceOptions {
  int grid = 1024;        // cells per axis; sizes and times are multiples
  uint64_t unit = 1024;   // bytes (and time steps) per cell
  int min_buffers = 120;  // the tiling has a count in this range
  int max_buffers = 300;
  double min_removed_area = 0;     // thinning removes at least this much
  double max_removed_area = 0.10;  // and up to this fraction of the area
  int full_columns = 6;            // time columns kept exactly full
  // Thin the smallest pieces first (else in random order): many small holes
  // spread over time leave fewer sections exactly full.
  bool small_first = false;
};

// Options for a second family calibrated to the challenging sets' published
// statistics (A-F: 154-296 buffers, 71-174 sections, 0-50 of them full,
// 89-98% of the rectangle filled, F 66%): more buffers, holes spread by
// thinning small pieces first, one protected column. The default family has
// about twice as many full sections (median 49, up to 145).
HardInstanceOptions CalibratedHardOptions();

struct HardInstance {
  BufferSet set;                  // ids 0.., in shuffled order
  std::vector<uint64_t> offsets;  // per buffer: the packing it was cut from
  uint64_t capacity = 0;          // grid * unit; equals the peak live bytes
};

// Deterministic in `seed` and `options`.
HardInstance MakeHardInstance(uint64_t seed,
                              const HardInstanceOptions& options);

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_HARD_INSTANCES_H_
