// AllocatorStats: counters with the names TensorFlow users know.
#ifndef TENSORMEM_ALLOC_ALLOCATOR_STATS_H_
#define TENSORMEM_ALLOC_ALLOCATOR_STATS_H_

#include <cstdint>
#include <optional>
#include <string>

namespace tensormem {

struct AllocatorStats {
  int64_t num_allocs = 0;     // allocations served since the last ClearStats
  uint64_t bytes_in_use = 0;  // sum of chunk sizes handed out
  uint64_t peak_bytes_in_use = 0;
  uint64_t largest_alloc_size = 0;  // largest chunk handed out
  std::optional<uint64_t> bytes_limit;
  uint64_t pool_bytes = 0;  // bytes held from the upstream
  uint64_t peak_pool_bytes = 0;
  uint64_t largest_free_block_bytes = 0;
  // Also under PyTorch's names (see AllocatorStatsToJson): requested bytes
  // of live blocks, free bytes inside regions that are split into several
  // chunks, regions (segments), failed requests, and requests that returned
  // free regions to the upstream and tried again.
  uint64_t bytes_requested = 0;
  uint64_t inactive_split_bytes = 0;
  int64_t num_regions = 0;
  int64_t num_ooms = 0;
  int64_t num_alloc_retries = 0;
  // Allocators that learn loops (the planned policy): iterations served from
  // a plan, and, from the iteration the current plan took over, the peak
  // pool and the peak of requested live bytes (unset while none serves).
  int64_t planned_iterations = 0;
  std::optional<uint64_t> steady_peak_pool_bytes;
  std::optional<uint64_t> steady_peak_bytes_requested;
  // What became of the plans such an allocator found: why none serves.
  struct LoopPlans {
    int64_t found = 0;         // loops found and planned
    int64_t taken_over = 0;    // began serving
    int64_t without_room = 0;  // could not take over within the pool's peak
    int64_t not_repeated = 0;  // the iteration followed differed from the plan
    int64_t waiting = 0;       // found, not yet taken over (0 or 1)
  };
  std::optional<LoopPlans> loop_plans;  // unset: an allocator that never learns

  // Adds another pool's counts and sizes (peaks: the sum of the peaks, an
  // upper bound; largest sizes: the larger); bytes_limit is the caller's.
  void AddPool(const AllocatorStats& pool);

  // One "Name: value" line per field, sizes human-readable.
  std::string DebugString() const;
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_ALLOCATOR_STATS_H_
