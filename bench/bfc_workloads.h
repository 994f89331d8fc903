// Workloads shared by the BFC benchmarks: the allocator under test, TF's
// delayed-free size cycle, a replayable random workload and a fragmented heap.
#ifndef TENSORMEM_BENCH_BFC_WORKLOADS_H_
#define TENSORMEM_BENCH_BFC_WORKLOADS_H_

#include <cmath>
#include <cstddef>
#include <iterator>
#include <memory>
#include <random>
#include <vector>

#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/bfc_free_index.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem::bench {

// A BFC allocator over a simulated upstream (so only bookkeeping is measured),
// one region of `limit` bytes, no retries.
inline std::unique_ptr<BfcAllocator> MakeBenchAllocator(
    std::unique_ptr<BfcFreeIndex> index, uint64_t limit = 16 * kGiB) {
  BfcAllocator::Options options;
  options.allow_growth = false;
  options.allow_retry_on_failure = false;
  options.log_failures = false;
  return std::make_unique<BfcAllocator>(
      std::make_unique<SimulatedSubAllocator>(limit), limit, options,
      std::move(index));
}

// The size cycle of TensorFlow's delayed-free GPU benchmark.
inline constexpr size_t kDelayedSizes[] = {256, 4096, 16384, 4096,
                                           512, 1024, 1024};

// Step `step` of the delayed-free workload: frees the block allocated
// ring.size() steps earlier (if any) and allocates the next size of the cycle
// in its place. Frees nothing it did not allocate: the ring starts null.
inline void DelayedFreeStep(BfcAllocator& allocator, std::vector<void*>& ring,
                            size_t step) {
  void*& slot = ring[step % ring.size()];
  if (slot != nullptr) allocator.Deallocate(slot);
  slot = allocator.AllocateRaw(256,
                               kDelayedSizes[step % std::size(kDelayedSizes)]);
}

// One step of a random workload: allocate `bytes` into `slot`, or free `slot`.
struct WorkloadOp {
  bool allocate;
  size_t slot;
  size_t bytes;
};

// Sizes log-uniform from 1 B to 4 MiB, about `live` blocks live at a time,
// frees in random order; `ops` steps, then frees of whatever is left, so a
// run leaves the allocator empty. Slots are < 2 * live.
inline std::vector<WorkloadOp> RandomWorkload(size_t live, size_t ops) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> exponent(0, 22);
  std::vector<WorkloadOp> workload;
  std::vector<size_t> used, unused;
  for (size_t s = 0; s < 2 * live; ++s) unused.push_back(s);
  while (workload.size() < ops) {
    const bool allocate =
        used.empty() || (!unused.empty() && (used.size() < live || rng() % 2));
    if (allocate) {
      const size_t pick = rng() % unused.size();
      const size_t bytes = 1 + static_cast<size_t>(std::exp2(exponent(rng)));
      workload.push_back({true, unused[pick], bytes});
      used.push_back(unused[pick]);
      unused[pick] = unused.back();
      unused.pop_back();
    } else {
      const size_t pick = rng() % used.size();
      workload.push_back({false, used[pick], 0});
      unused.push_back(used[pick]);
      used[pick] = used.back();
      used.pop_back();
    }
  }
  for (size_t slot : used) workload.push_back({false, slot, 0});
  return workload;
}

inline void RunWorkload(BfcAllocator& allocator,
                        const std::vector<WorkloadOp>& workload,
                        std::vector<void*>& slots) {
  for (const WorkloadOp& op : workload) {
    if (op.allocate) {
      slots[op.slot] = allocator.AllocateRaw(256, op.bytes);
    } else {
      allocator.Deallocate(slots[op.slot]);
    }
  }
}

// The differential test's workload (tests/alloc/bfc_randomized_test.cc): sizes
// log-uniform from 1 B to 512 MiB, 52% allocations and 48% frees of a random
// live block, for `steps` steps; under a 4 GiB limit (kLimitWorkloadBytes) the
// heap runs full and many requests fail. Frees everything at the end.
inline constexpr uint64_t kLimitWorkloadBytes = 4 * kGiB;

inline void RunToTheLimit(BfcAllocator& allocator, size_t steps) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> exponent(0, 29);
  std::vector<void*> live;
  for (size_t step = 0; step < steps; ++step) {
    if (live.empty() || rng() % 100 < 52) {
      const size_t bytes = static_cast<size_t>(std::exp2(exponent(rng)));
      if (void* p = allocator.AllocateRaw(256, bytes)) live.push_back(p);
    } else {
      const size_t victim = rng() % live.size();
      allocator.Deallocate(live[victim]);
      live[victim] = live.back();
      live.pop_back();
    }
  }
  for (void* p : live) allocator.Deallocate(p);
}

// A fragmented heap: `holes` free chunks of random sizes in one bin (2 KiB up
// to 3.75 KiB), each kept apart by a pinned 256-byte block, as after many
// interleaved short- and long-lived tensors. A 3.75 KiB request then belongs
// to that bin, where a linear scan must pass every smaller hole. Returns the
// pinned blocks.
inline std::vector<void*> Fragment(BfcAllocator& allocator, size_t holes) {
  std::mt19937_64 rng(2);
  std::vector<void*> short_lived, pinned;
  for (size_t i = 0; i < holes; ++i) {
    short_lived.push_back(allocator.AllocateRaw(256, 2048 + 256 * (rng() % 7)));
    pinned.push_back(allocator.AllocateRaw(256, 256));
  }
  for (void* p : short_lived) allocator.Deallocate(p);
  return pinned;
}

// The request that lands in Fragment's bin after every hole.
inline constexpr size_t kFragmentedRequest = 3800;

}  // namespace tensormem::bench

#endif  // TENSORMEM_BENCH_BFC_WORKLOADS_H_
