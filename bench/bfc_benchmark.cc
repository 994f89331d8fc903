// BFC allocator throughput with the fast free index and with the TensorFlow-
// style reference index (per-bin std::set, linear scan), same allocator
// otherwise. Memory comes from a simulated upstream, so only the allocator's
// bookkeeping is measured.
//
//   bfc_benchmark --benchmark_filter=Delayed
#include <memory>
#include <vector>

#include "alloc/reference_free_index.h"
#include "benchmark/benchmark.h"
#include "bfc_workloads.h"
#include "tensormem/alloc/bfc_allocator.h"

namespace tensormem {
namespace {

enum class IndexKind { kFast, kReference };

std::unique_ptr<BfcAllocator> MakeAllocator(IndexKind kind,
                                            uint64_t limit = 16 * kGiB) {
  if (kind == IndexKind::kFast)
    return bench::MakeBenchAllocator(MakeFastFreeIndex(), limit);
  return bench::MakeBenchAllocator(std::make_unique<ReferenceFreeIndex>(),
                                   limit);
}

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
  for (auto _ : state) bench::DelayedFreeStep(allocator, ring, step++);
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

template <IndexKind kKind>
void BM_Randomized(benchmark::State& state) {
  const size_t live = state.range(0);
  const std::vector<bench::WorkloadOp> workload =
      bench::RandomWorkload(live, 20 * live);
  auto allocator = MakeAllocator(kKind);
  std::vector<void*> slots(2 * live, nullptr);
  for (auto _ : state) bench::RunWorkload(*allocator, workload, slots);
  state.SetItemsProcessed(state.iterations() * workload.size());
}

template <IndexKind kKind>
void BM_RandomizedToTheLimit(benchmark::State& state) {
  constexpr size_t kSteps = 10'000;
  auto allocator = MakeAllocator(kKind, bench::kLimitWorkloadBytes);
  for (auto _ : state) bench::RunToTheLimit(*allocator, kSteps);
  state.SetItemsProcessed(state.iterations() * kSteps);
}

template <IndexKind kKind>
void BM_FragmentedAllocFree(benchmark::State& state) {
  auto allocator = MakeAllocator(kKind);
  const std::vector<void*> pinned = bench::Fragment(*allocator, state.range(0));
  for (auto _ : state) {
    void* p = allocator->AllocateRaw(256, bench::kFragmentedRequest);
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
  const std::vector<bench::WorkloadOp> workload =
      bench::RandomWorkload(live, 20 * live);
  auto allocator = MakeAllocator(kKind);
  const std::vector<void*> pinned = bench::Fragment(*allocator, state.range(0));
  std::vector<void*> slots(2 * live, nullptr);
  for (auto _ : state) bench::RunWorkload(*allocator, workload, slots);
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
BENCHMARK_TEMPLATE(BM_RandomizedToTheLimit, kFast);
BENCHMARK_TEMPLATE(BM_RandomizedToTheLimit, kReference);
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
