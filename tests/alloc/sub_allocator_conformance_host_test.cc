// The sub-allocator contract for the host, simulated and vmm kinds, and the
// fault-injecting wrapper when it injects nothing.
#include "alloc/sub_allocator_conformance.h"
#include "tensormem/alloc/fault_injecting_sub_allocator.h"
#include "tensormem/alloc/host_sub_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/alloc/vmm_sub_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using Visitors = std::vector<SubAllocator::Visitor>;

INSTANTIATE_TEST_SUITE_P(
    HostKinds, SubAllocatorConformanceTest,
    ::testing::Values(
        SubAllocatorConformanceParam{
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
        SubAllocatorConformanceParam{"vmm",
                                     [](Visitors alloc, Visitors free) {
                                       return std::make_unique<VmmSubAllocator>(
                                           kGiB, alloc, free);
                                     },
                                     2 * kMiB}),
    SubAllocatorConformanceName);

}  // namespace
}  // namespace tensormem
