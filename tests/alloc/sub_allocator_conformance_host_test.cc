// The sub-allocator contract for the host, simulated and vmm kinds, and the
// fault-injecting wrapper when it injects nothing.
#include <set>
#include <string>
#include <vector>

#include "alloc/sub_allocator_conformance.h"
#include "tensormem/alloc/fault_injecting_sub_allocator.h"
#include "tensormem/alloc/host_sub_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/alloc/sub_allocator_registry.h"
#include "tensormem/alloc/vmm_sub_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using Visitors = std::vector<SubAllocator::Visitor>;

std::vector<SubAllocatorConformanceParam> HostCases() {
  return {SubAllocatorConformanceParam{
              "host",
              [](Visitors alloc, Visitors free) {
                return std::make_unique<HostSubAllocator>(alloc, free);
              },
              4096},
          SubAllocatorConformanceParam{
              "simulated",
              [](Visitors alloc, Visitors free) {
                return std::make_unique<SimulatedSubAllocator>(
                    kGiB, /*coalescing=*/false, alloc, free);
              },
              2 * kMiB, /*host_accessible=*/false},
          SubAllocatorConformanceParam{
              "simulated_coalescing",
              [](Visitors alloc, Visitors free) {
                return std::make_unique<SimulatedSubAllocator>(
                    kGiB, /*coalescing=*/true, alloc, free);
              },
              2 * kMiB, /*host_accessible=*/false},
          SubAllocatorConformanceParam{
              "fault_injecting_host",
              [](Visitors alloc, Visitors free) {
                return std::make_unique<FaultInjectingSubAllocator>(
                    std::make_unique<HostSubAllocator>(alloc, free));
              },
              4096},
          SubAllocatorConformanceParam{
              "vmm",
              [](Visitors alloc, Visitors free) {
                return std::make_unique<VmmSubAllocator>(kGiB, alloc, free);
              },
              2 * kMiB}};
}

INSTANTIATE_TEST_SUITE_P(HostKinds, SubAllocatorConformanceTest,
                         ::testing::ValuesIn(HostCases()),
                         SubAllocatorConformanceName);

// Adding a kind to the registry's table adds its case here, or this fails.
TEST(SubAllocatorConformanceCoverageTest, EveryRegisteredKindHasACase) {
  std::set<std::string> cases;
  for (const SubAllocatorConformanceParam& param : HostCases())
    cases.insert(param.name);
  for (const SubAllocatorInfo& info : SubAllocatorKinds())
    EXPECT_TRUE(cases.contains(std::string(info.name))) << info.name;
}

}  // namespace
}  // namespace tensormem
