// The fault sweep's workload and checks, for any upstream: the simulated one
// (tests/alloc/fault_sweep_test.cc) and the CUDA kinds on the fake driver
// (tests/cuda/cuda_fault_sweep_test.cc).
//
//   int64_t points = testing::SweepUpstreamFaults(make_allocator, 3);
//
// `make_allocator` builds a fresh BFC allocator over a
// FaultInjectingSubAllocator and says where that probe is. For every
// workload, a baseline run counts the upstream calls; then the upstream fails
// at call k for every k. After every request the invariants hold, the
// statistics equal the live blocks and the pool equals the upstream's live
// bytes; at the end no region is left or freed with a wrong size; a request
// that failed only because of the fault succeeds once the upstream works.
#ifndef TENSORMEM_TESTS_ALLOC_FAULT_SWEEP_UTIL_H_
#define TENSORMEM_TESTS_ALLOC_FAULT_SWEEP_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "alloc/bfc_test_util.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/fault_injecting_sub_allocator.h"

namespace tensormem::testing {

struct FaultRequest {
  size_t bytes;
  size_t alignment;
  bool free_one_before;  // free the oldest live block first
};

// Mixed sizes (256 B .. 24 MiB) for a 64 MiB limit: growth, splits, reuse.
inline std::vector<FaultRequest> FaultWorkload(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<FaultRequest> requests;
  for (int i = 0; i < 120; ++i) {
    const size_t bytes = 1 + rng() % (size_t{1} << (8 + rng() % 17));
    requests.push_back({bytes, size_t{1} << (rng() % 12), rng() % 3 == 0});
  }
  return requests;
}

struct FaultRunResult {
  int64_t upstream_calls = 0;
  std::vector<size_t> failed;  // indices of requests that returned null
};

// Runs `requests`, checking after every step; frees everything at the end and
// returns the regions. `probe` is the allocator's upstream.
inline FaultRunResult RunFaultWorkload(
    BfcAllocator& allocator, FaultInjectingSubAllocator& probe,
    const std::vector<FaultRequest>& requests) {
  FaultRunResult result;
  std::vector<void*> live;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].free_one_before && !live.empty()) {
      allocator.Deallocate(live.front());
      live.erase(live.begin());
    }
    void* block =
        allocator.AllocateRaw(requests[i].alignment, requests[i].bytes);
    if (block == nullptr) {
      result.failed.push_back(i);
    } else {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(block) %
                    std::max<size_t>(256, requests[i].alignment),
                0u);
      live.push_back(block);
    }
    EXPECT_TRUE(InvariantsHold(allocator)) << "request " << i;
    uint64_t in_use = 0;
    for (void* p : live) in_use += allocator.AllocatedSize(p).value_or(0);
    EXPECT_EQ(allocator.GetStats()->bytes_in_use, in_use) << "request " << i;
    EXPECT_EQ(allocator.GetStats()->pool_bytes, probe.live_bytes())
        << "request " << i;
  }
  for (void* p : live) allocator.Deallocate(p);
  allocator.ReleaseFreeRegions();
  EXPECT_EQ(probe.live_regions(), 0u) << "regions leaked";
  EXPECT_EQ(probe.bad_frees(), 0) << "regions freed with the wrong size";
  result.upstream_calls = probe.alloc_calls();
  return result;
}

using FaultyBfcFactory = std::function<std::unique_ptr<BfcAllocator>(
    FaultInjectingSubAllocator** probe)>;

// Workloads 1..`workloads`, each with the upstream failing at every call in
// turn; returns the number of fault points tried.
inline int64_t SweepUpstreamFaults(const FaultyBfcFactory& make_allocator,
                                   uint32_t workloads) {
  int64_t fault_points = 0;
  for (uint32_t seed = 1; seed <= workloads; ++seed) {
    const std::vector<FaultRequest> requests = FaultWorkload(seed);
    FaultInjectingSubAllocator* probe = nullptr;
    std::unique_ptr<BfcAllocator> baseline_allocator = make_allocator(&probe);
    if (baseline_allocator == nullptr) {
      ADD_FAILURE() << "no allocator";
      return fault_points;
    }
    const FaultRunResult baseline =
        RunFaultWorkload(*baseline_allocator, *probe, requests);
    EXPECT_GT(baseline.upstream_calls, 0);
    for (int64_t k = 1; k <= baseline.upstream_calls + 1; ++k) {
      SCOPED_TRACE(::testing::Message()
                   << "seed " << seed << " failing call " << k);
      std::unique_ptr<BfcAllocator> allocator = make_allocator(&probe);
      if (allocator == nullptr) {
        ADD_FAILURE() << "no allocator";
        return fault_points;
      }
      probe->FailAllocCall(k);
      const FaultRunResult faulted =
          RunFaultWorkload(*allocator, *probe, requests);
      ++fault_points;
      for (size_t i : faulted.failed) {
        if (std::find(baseline.failed.begin(), baseline.failed.end(), i) !=
            baseline.failed.end())
          continue;
        void* block =
            allocator->AllocateRaw(requests[i].alignment, requests[i].bytes);
        EXPECT_NE(block, nullptr)
            << "request " << i << " (" << requests[i].bytes
            << " bytes, alignment " << requests[i].alignment
            << ") still fails: " << allocator->LastFailureReport();
        allocator->Deallocate(block);
      }
      EXPECT_TRUE(InvariantsHold(*allocator));
    }
  }
  return fault_points;
}

}  // namespace tensormem::testing

#endif  // TENSORMEM_TESTS_ALLOC_FAULT_SWEEP_UTIL_H_
