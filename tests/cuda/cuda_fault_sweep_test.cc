// The fault sweep (tests/alloc/fault_sweep_util.h) over every CUDA
// sub-allocator kind on the fake driver: the driver's allocation fails at
// call k for every k, under every registered policy choice the kind can
// serve. The BFC allocator keeps its invariants and statistics, gives every
// region back with its size, and the fake driver ends with nothing live
// (CudaTest's tear-down).
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "alloc/fault_sweep_util.h"
#include "alloc/policy_test_util.h"
#include "cuda/cuda_test_env.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/fault_injecting_sub_allocator.h"
#include "tensormem/cuda/cuda_sub_allocators.h"

namespace tensormem {
namespace {

std::unique_ptr<BfcAllocator> FaultyCudaBfc(
    const std::string& kind, const testing::PolicyChoice& policy,
    FaultInjectingSubAllocator** probe) {
  CudaSubAllocatorParams params;
  params.reserve_bytes = kGiB;
  absl::StatusOr<std::unique_ptr<SubAllocator>> upstream =
      CreateCudaSubAllocator(kind, params);
  if (!upstream.ok()) {
    ADD_FAILURE() << kind << ": " << upstream.status();
    return nullptr;
  }
  auto faulty =
      std::make_unique<FaultInjectingSubAllocator>(*std::move(upstream));
  *probe = faulty.get();
  absl::StatusOr<std::unique_ptr<BfcAllocator>> bfc = testing::MakeChoiceBfc(
      policy, std::move(faulty), 64 * kMiB, testing::QuietOptions(true));
  if (!bfc.ok()) {
    ADD_FAILURE() << kind << " " << policy.Label() << ": " << bfc.status();
    return nullptr;
  }
  return *std::move(bfc);
}

using CudaFaultSweepTest = CudaTest;

TEST_F(CudaFaultSweepTest, EveryKindSurvivesADriverFailingAtEveryCall) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  int64_t fault_points = 0;
  for (const std::string kind :
       {"cuda", "cuda-host", "cuda-vmm", "cuda-async"}) {
    for (const testing::PolicyChoice& policy : testing::AllPolicyChoices()) {
      // Expandable segments need regions that extend each other.
      if (policy.NeedsCoalescing() && kind != "cuda-vmm") continue;
      SCOPED_TRACE(kind + " " + policy.Label());
      fault_points += testing::SweepUpstreamFaults(
          [&](FaultInjectingSubAllocator** probe) {
            return FaultyCudaBfc(kind, policy, probe);
          },
          /*workloads=*/2);
    }
  }
  std::printf("[sweep] cuda fault points: %lld\n",
              static_cast<long long>(fault_points));
}

}  // namespace
}  // namespace tensormem
