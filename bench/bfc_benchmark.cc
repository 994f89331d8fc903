// BFC allocator throughput with the fast free index and with the TensorFlow-
// style reference index (per-bin std::set, linear scan), same allocator
// otherwise. Memory comes from a simulated upstream, so only the allocator's
// bookkeeping is measured.
//
//   bfc_benchmark --benchmark_filter=Delayed
#include <memory>
#include <random>
#include <vector>

#include "alloc/reference_free_index.h"
#include "benchmark/benchmark.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

enum class IndexKind { kFast, kReference };

std::unique_ptr<BfcAllocator> MakeAllocator(IndexKind kind,
                                            uint64_t limit = 16 * kGiB) {
  BfcAllocator::Options options;
  options.allow_growth = false;
  options.allow_retry_on_failure = false;
  options.log_failures = false;
  std::unique_ptr<BfcFreeIndex> index;
  if (kind == IndexKind::kFast) {
    index = MakeFastFreeIndex();
  } else {
    index = std::make_unique<ReferenceFreeIndex>();
  }
  return std::make_unique<BfcAllocator>(
      std::make_unique<SimulatedSubAllocator>(limit), limit, options,
      std::move(index));
}

// The size cycle of TensorFlow's delayed-free GPU benchmark.
constexpr size_t kDelayedSizes[] = {256, 4096, 16384, 4096, 512, 1024, 1024};

template <IndexKind kKind>
void BM_AllocFree(benchmark::State& state) {
  auto allocator = MakeAllocator(kKind);
  for (auto _ : state) {
    void* p = allocator->AllocateRaw(256, 1024);
    benchmark::DoNotOptimize(p);
    allocator->Deallocate(p);
  }
  state.SetItemsProcessed(state.iterations());
}

template <IndexKind kKind>
void BM_BatchThenFree(benchmark::State& state) {
  auto allocator = MakeAllocator(kKind);
  const size_t batch = state.range(0);
  std::vector<void*> blocks(batch);
  for (auto _ : state) {
    for (size_t i = 0; i < batch; ++i)
      blocks[i] = allocator->AllocateRaw(256, 1024);
    for (size_t i = 0; i < batch; ++i) allocator->Deallocate(blocks[i]);
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

// Each allocation is freed `delay` allocations later.
void RunDelayed(benchmark::State& state, BfcAllocator& allocator) {
  const size_t delay = state.range(0);
  std::vector<void*> ring(delay, nullptr);
  size_t step = 0;
  for (auto _ : state) {
    void*& slot = ring[step % delay];
    if (slot != nullptr) allocator.Deallocate(slot);
    slot = allocator.AllocateRaw(
        256, kDelayedSizes[step % std::size(kDelayedSizes)]);
    ++step;
  }
  for (void* p : ring) allocator.Deallocate(p);
  state.SetItemsProcessed(state.iterations());
}

template <IndexKind kKind>
void BM_DelayedFree(benchmark::State& state) {
  auto allocator = MakeAllocator(kKind);
  RunDelayed(state, *allocator);
}

// Threads share one allocator per index kind, created on first use and kept
// for the whole program, so no thread can outlive it.
template <IndexKind kKind>
BfcAllocator& SharedAllocator() {
  static BfcAllocator* const allocator = MakeAllocator(kKind).release();
  return *allocator;
}

template <IndexKind kKind>
void BM_DelayedFreeThreaded(benchmark::State& state) {
  RunDelayed(state, SharedAllocator<kKind>());
}

// A replayable random workload: sizes log-uniform from 1 B to 4 MiB, about
// `live` blocks live at a time, frees in random order.
struct Op {
  bool allocate;
  size_t slot;
  size_t bytes;
};

std::vector<Op> RandomWorkload(size_t live, size_t ops) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> exponent(0, 22);
  std::vector<Op> workload;
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
  // Free whatever is left, so every run starts from an empty allocator.
  for (size_t slot : used) workload.push_back({false, slot, 0});
  return workload;
}

template <IndexKind kKind>
void BM_Randomized(benchmark::State& state) {
  const size_t live = state.range(0);
  const std::vector<Op> workload = RandomWorkload(live, 20 * live);
  auto allocator = MakeAllocator(kKind);
  std::vector<void*> slots(2 * live, nullptr);
  for (auto _ : state) {
    for (const Op& op : workload) {
      if (op.allocate) {
        slots[op.slot] = allocator->AllocateRaw(256, op.bytes);
      } else {
        allocator->Deallocate(slots[op.slot]);
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * workload.size());
}

// A fragmented heap: `holes` free chunks of random sizes in one bin (2 KiB up
// to 3.75 KiB), each kept apart by a pinned 256-byte block, as after many
// interleaved short- and long-lived tensors. A 3.75 KiB request then belongs
// to that bin, where a linear scan must pass every smaller hole.
std::vector<void*> Fragment(BfcAllocator& allocator, size_t holes) {
  std::mt19937_64 rng(2);
  std::vector<void*> short_lived, pinned;
  for (size_t i = 0; i < holes; ++i) {
    short_lived.push_back(allocator.AllocateRaw(256, 2048 + 256 * (rng() % 7)));
    pinned.push_back(allocator.AllocateRaw(256, 256));
  }
  for (void* p : short_lived) allocator.Deallocate(p);
  return pinned;
}

template <IndexKind kKind>
void BM_FragmentedAllocFree(benchmark::State& state) {
  auto allocator = MakeAllocator(kKind);
  const std::vector<void*> pinned = Fragment(*allocator, state.range(0));
  for (auto _ : state) {
    void* p = allocator->AllocateRaw(256, 3800);
    benchmark::DoNotOptimize(p);
    allocator->Deallocate(p);
  }
  state.SetItemsProcessed(state.iterations());
  for (void* p : pinned) allocator->Deallocate(p);
}

// The randomized workload (sizes 1 B .. 4 MiB, 1,000 live) on a heap
// fragmented by `holes` holes.
template <IndexKind kKind>
void BM_RandomizedFragmented(benchmark::State& state) {
  const size_t live = 1000;
  const std::vector<Op> workload = RandomWorkload(live, 20 * live);
  auto allocator = MakeAllocator(kKind);
  const std::vector<void*> pinned = Fragment(*allocator, state.range(0));
  std::vector<void*> slots(2 * live, nullptr);
  for (auto _ : state) {
    for (const Op& op : workload) {
      if (op.allocate) {
        slots[op.slot] = allocator->AllocateRaw(256, op.bytes);
      } else {
        allocator->Deallocate(slots[op.slot]);
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * workload.size());
  for (void* p : pinned) allocator->Deallocate(p);
}

constexpr IndexKind kFast = IndexKind::kFast;
constexpr IndexKind kReference = IndexKind::kReference;

BENCHMARK_TEMPLATE(BM_AllocFree, kFast);
BENCHMARK_TEMPLATE(BM_AllocFree, kReference);
BENCHMARK_TEMPLATE(BM_BatchThenFree, kFast)->Arg(100)->Arg(1000)->Arg(10000);
BENCHMARK_TEMPLATE(BM_BatchThenFree, kReference)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000);
BENCHMARK_TEMPLATE(BM_DelayedFree, kFast)
    ->Arg(1)
    ->Arg(10)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000);
BENCHMARK_TEMPLATE(BM_DelayedFree, kReference)
    ->Arg(1)
    ->Arg(10)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000);
BENCHMARK_TEMPLATE(BM_DelayedFreeThreaded, kFast)
    ->Arg(100)
    ->Arg(1000)
    ->Threads(2)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_DelayedFreeThreaded, kReference)
    ->Arg(100)
    ->Arg(1000)
    ->Threads(2)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_Randomized, kFast)->Arg(100)->Arg(1000)->Arg(10000);
BENCHMARK_TEMPLATE(BM_Randomized, kReference)->Arg(100)->Arg(1000)->Arg(10000);
BENCHMARK_TEMPLATE(BM_FragmentedAllocFree, kFast)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000);
BENCHMARK_TEMPLATE(BM_FragmentedAllocFree, kReference)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000);
BENCHMARK_TEMPLATE(BM_RandomizedFragmented, kFast)->Arg(1000)->Arg(10000);
BENCHMARK_TEMPLATE(BM_RandomizedFragmented, kReference)->Arg(1000)->Arg(10000);

}  // namespace
}  // namespace tensormem

BENCHMARK_MAIN();
