// Costs of the upstreams and adaptors: what an adaptor adds to an
// allocate+free pair, what a region costs from each sub-allocator, and what a
// free costs the retrier when nobody waits.
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "tensormem/alloc/host_sub_allocator.h"
#include "tensormem/alloc/limiting_allocator.h"
#include "tensormem/alloc/retry.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/alloc/system_allocator.h"
#include "tensormem/alloc/tracking_allocator.h"
#include "tensormem/alloc/vmm_sub_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

constexpr size_t kBlockBytes = 4096;

void AllocFreePairs(benchmark::State& state, Allocator& allocator) {
  for (auto _ : state) {
    void* p = allocator.Allocate(kBlockBytes);
    benchmark::DoNotOptimize(p);
    allocator.Deallocate(p);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_SystemAllocator(benchmark::State& state) {
  SystemAllocator system;
  AllocFreePairs(state, system);
}
BENCHMARK(BM_SystemAllocator);

void BM_LimitingOverSystem(benchmark::State& state) {
  SystemAllocator system;
  LimitingAllocator capped(system, kGiB);
  AllocFreePairs(state, capped);
}
BENCHMARK(BM_LimitingOverSystem);

void BM_TrackingOverSystem(benchmark::State& state) {
  SystemAllocator system;
  std::shared_ptr<TrackingAllocator> tracker =
      TrackingAllocator::Create(system);
  AllocFreePairs(state, *tracker);
}
BENCHMARK(BM_TrackingOverSystem);

// Regions of 2 MiB, 64 live at a time, freed oldest first.
void RegionChurn(benchmark::State& state, SubAllocator& upstream) {
  constexpr size_t kLive = 64;
  std::vector<std::pair<void*, size_t>> live(kLive, {nullptr, 0});
  size_t next = 0;
  for (auto _ : state) {
    auto& [region, bytes] = live[next];
    if (region != nullptr) upstream.Free(region, bytes);
    region = upstream.Alloc(2 * kMiB, 256, &bytes);
    benchmark::DoNotOptimize(region);
    next = (next + 1) % kLive;
  }
  for (auto [region, bytes] : live) upstream.Free(region, bytes);
  state.SetItemsProcessed(state.iterations());
}

void BM_HostRegions(benchmark::State& state) {
  HostSubAllocator host;
  RegionChurn(state, host);
}
BENCHMARK(BM_HostRegions);

void BM_SimulatedRegions(benchmark::State& state) {
  SimulatedSubAllocator simulated(kTiB);
  RegionChurn(state, simulated);
}
BENCHMARK(BM_SimulatedRegions);

void BM_VmmRegions(benchmark::State& state) {
  VmmSubAllocator vmm(kTiB);
  RegionChurn(state, vmm);
}
BENCHMARK(BM_VmmRegions);

void BM_NotifyDeallocWithoutWaiters(benchmark::State& state) {
  AllocationRetrier retrier;
  for (auto _ : state) retrier.NotifyDealloc();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NotifyDeallocWithoutWaiters);

}  // namespace
}  // namespace tensormem

BENCHMARK_MAIN();
