// Tests of the host, simulated and vmm sub-allocators, the free-range map
// under them, the fault-injecting wrapper and the registry.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/fault_injecting_sub_allocator.h"
#include "tensormem/alloc/host_sub_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/alloc/sub_allocator_registry.h"
#include "tensormem/alloc/vmm_sub_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

uint64_t OffsetOf(const SubAllocator& upstream, const void* ptr) {
  return static_cast<const char*>(ptr) -
         static_cast<const char*>(upstream.BaseAddress());
}

TEST(HostSubAllocatorTest, HonoursAlignmentAndCallsVisitors) {
  std::vector<std::string> events;
  auto visitor = [&events](std::string name) {
    return [&events, name](void*, int index, size_t bytes) {
      events.push_back(name + ":" + std::to_string(index) + ":" +
                       std::to_string(bytes));
    };
  };
  HostSubAllocator host({visitor("alloc1"), visitor("alloc2")},
                        {visitor("free1"), visitor("free2")});
  EXPECT_FALSE(host.SupportsCoalescing());
  EXPECT_EQ(host.GetMemoryKind(), MemoryKind::kHostPageable);
  for (size_t alignment :
       {size_t{0}, size_t{1}, size_t{8}, size_t{256}, size_t{4096}}) {
    size_t received = 0;
    void* region = host.Alloc(1000, alignment, &received);
    ASSERT_NE(region, nullptr);
    EXPECT_EQ(received, 1000u);
    if (alignment > 0) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(region) % alignment, 0u);
    }
    std::memset(region, 0xab, received);  // host memory is real memory
    events.clear();
    host.Free(region, received);
  }
  EXPECT_THAT(events, ElementsAre("free2:0:1000", "free1:0:1000"));
}

TEST(HostSubAllocatorTest, RefusesBadRequests) {
  HostSubAllocator host;
  size_t received = 123;
  EXPECT_EQ(host.Alloc(0, 256, &received), nullptr);
  EXPECT_EQ(received, 0u);
  EXPECT_EQ(host.Alloc(64, 100, &received), nullptr);  // not a power of two
  EXPECT_EQ(host.Alloc(SIZE_MAX - 10, 256, &received), nullptr);
  EXPECT_EQ(received, 0u);
}

TEST(SimulatedSubAllocatorTest, PlacesRegionsFirstFitFromAnAlignedBase) {
  SimulatedSubAllocator gpu(kGiB);
  ASSERT_TRUE(gpu.status().ok()) << gpu.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(gpu.BaseAddress()) % (2 * kMiB), 0u);
  EXPECT_EQ(gpu.GetMemoryKind(), MemoryKind::kSimulated);
  EXPECT_FALSE(gpu.SupportsCoalescing());
  size_t a_size, b_size, c_size, d_size;
  void* a = gpu.Alloc(2 * kMiB, 256, &a_size);
  void* b = gpu.Alloc(1000, 256, &b_size);
  void* c = gpu.Alloc(4 * kMiB, 256, &c_size);  // aligned up past b's odd end
  EXPECT_EQ(OffsetOf(gpu, a), 0u);
  EXPECT_EQ(OffsetOf(gpu, b), 2 * kMiB);
  EXPECT_EQ(OffsetOf(gpu, c), 2 * kMiB + 1024);
  EXPECT_EQ(b_size, 1000u);
  gpu.Free(a, a_size);
  void* d = gpu.Alloc(kMiB, kMiB, &d_size);  // the first hole that fits
  EXPECT_EQ(OffsetOf(gpu, d), 0u);
  void* e =
      gpu.Alloc(2 * kMiB, 2 * kMiB, &d_size);  // the hole is too small now
  EXPECT_EQ(OffsetOf(gpu, e), 8 * kMiB);
  EXPECT_EQ(gpu.region_count(), 4u);
  EXPECT_EQ(gpu.bytes_in_use(), kMiB + 1000 + 4 * kMiB + 2 * kMiB);
}

TEST(SimulatedSubAllocatorTest, ServesUpToItsCapacityAndNoMore) {
  SimulatedSubAllocator gpu(8 * kMiB, /*coalescing=*/true);
  EXPECT_TRUE(gpu.SupportsCoalescing());
  size_t received = 0;
  EXPECT_EQ(gpu.Alloc(8 * kMiB + 1, 256, &received), nullptr);
  void* whole = gpu.Alloc(8 * kMiB, 256, &received);
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(gpu.Alloc(1, 1, &received), nullptr);
  EXPECT_EQ(received, 0u);
  gpu.Free(whole, 8 * kMiB);
  EXPECT_EQ(gpu.Alloc(8 * kMiB, 256, &received), whole);
}

TEST(SimulatedSubAllocatorTest, ReservesMoreThanTheMachineHas) {
  SimulatedSubAllocator gpu(80 * kGiB);
  ASSERT_TRUE(gpu.status().ok()) << gpu.status();
  size_t received = 0;
  void* big = gpu.Alloc(79 * kGiB, 256, &received);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(received, 79 * kGiB);
  gpu.Free(big, received);
}

TEST(SimulatedSubAllocatorTest, ReportsAFailedReservation) {
  SimulatedSubAllocator empty(0);
  EXPECT_FALSE(empty.status().ok());
  EXPECT_EQ(empty.BaseAddress(), nullptr);
  size_t received = 0;
  EXPECT_EQ(empty.Alloc(256, 256, &received), nullptr);
  SimulatedSubAllocator huge(uint64_t{1}
                             << 62);  // far beyond any address space
  EXPECT_FALSE(huge.status().ok());
  EXPECT_THAT(std::string(huge.status().message()),
              HasSubstr("4611686018427387904"));
}

TEST(SimulatedSubAllocatorTest, IgnoresAndCountsBadFrees) {
  SimulatedSubAllocator gpu(16 * kMiB);
  size_t received = 0;
  void* region = gpu.Alloc(4096, 256, &received);
  gpu.Free(static_cast<char*>(region) + 256, 256);  // interior
  gpu.Free(region, 2048);                           // wrong size
  EXPECT_EQ(gpu.misuse_count(), 2);
  EXPECT_EQ(gpu.region_count(), 1u);
  gpu.Free(region, received);
  gpu.Free(region, received);  // double free
  EXPECT_EQ(gpu.misuse_count(), 3);
  EXPECT_EQ(gpu.bytes_in_use(), 0u);
}

TEST(VmmSubAllocatorTest, GrowsContiguouslyWithUsableMemory) {
  VmmSubAllocator vmm(kGiB);
  ASSERT_TRUE(vmm.status().ok()) << vmm.status();
  EXPECT_TRUE(vmm.SupportsCoalescing());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(vmm.BaseAddress()) % (2 * kMiB), 0u);
  size_t first_size, second_size, odd_size;
  char* first = static_cast<char*>(vmm.Alloc(2 * kMiB, 256, &first_size));
  char* second = static_cast<char*>(vmm.Alloc(4 * kMiB, 256, &second_size));
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(second, first + first_size);
  char* odd = static_cast<char*>(vmm.Alloc(1000, 256, &odd_size));
  EXPECT_EQ(odd, second + second_size);
  EXPECT_EQ(odd_size, vmm.granularity());  // rounded up to a whole page
  std::memset(first, 1, first_size);       // committed memory is writable
  std::memset(odd, 2, odd_size);
  EXPECT_EQ(vmm.committed_bytes(), first_size + second_size + odd_size);
}

TEST(VmmSubAllocatorTest, GrowsFromTheHighestRegionEvenWithHolesBelow) {
  VmmSubAllocator vmm(64 * kMiB);
  size_t a_size, b_size, c_size, d_size;
  char* a = static_cast<char*>(vmm.Alloc(4 * kMiB, 256, &a_size));
  char* b = static_cast<char*>(vmm.Alloc(4 * kMiB, 256, &b_size));
  vmm.Free(a, a_size);  // a hole below b
  char* c = static_cast<char*>(vmm.Alloc(kMiB, 256, &c_size));
  EXPECT_EQ(c, b + b_size);  // contiguous with b, not in the hole
  vmm.Free(c, c_size);       // the top shrinks back to b's end
  char* d = static_cast<char*>(vmm.Alloc(2 * kMiB, 256, &d_size));
  EXPECT_EQ(d, b + b_size);
  // The top now has 64 - 10 = 54 MiB left; a 56 MiB request cannot fit there
  // nor in the 4 MiB hole, while 3 MiB goes to the top.
  size_t received;
  EXPECT_EQ(vmm.Alloc(56 * kMiB, 256, &received), nullptr);
  char* e = static_cast<char*>(vmm.Alloc(54 * kMiB, 256, &received));
  EXPECT_EQ(e, d + d_size);
  char* f = static_cast<char*>(
      vmm.Alloc(3 * kMiB, 256, &received));  // top full: the hole
  EXPECT_EQ(f, a);
  EXPECT_EQ(vmm.misuse_count(), 0);
}

TEST(VmmSubAllocatorTest, FreeDecommitsAndBadFreesAreIgnored) {
  VmmSubAllocator vmm(16 * kMiB);
  size_t received = 0;
  void* region = vmm.Alloc(kMiB, 256, &received);
  vmm.Free(region, received + 1);
  vmm.Free(static_cast<char*>(region) + 4096, received - 4096);
  EXPECT_EQ(vmm.misuse_count(), 2);
  EXPECT_EQ(vmm.committed_bytes(), kMiB);
  vmm.Free(region, received);
  EXPECT_EQ(vmm.committed_bytes(), 0u);
  EXPECT_EQ(vmm.region_count(), 0u);
  void* again = vmm.Alloc(kMiB, 256, &received);
  EXPECT_EQ(again, region);
  EXPECT_EQ(static_cast<char*>(again)[0],
            0);  // fresh zero pages after a decommit
}

TEST(FaultInjectingSubAllocatorTest, FailsChosenCallsAndCounts) {
  FaultInjectingSubAllocator faulty(
      std::make_unique<SimulatedSubAllocator>(64 * kMiB));
  faulty.FailAllocCall(2);
  size_t received = 0;
  void* first = faulty.Alloc(kMiB, 256, &received);
  EXPECT_NE(first, nullptr);
  EXPECT_EQ(faulty.Alloc(kMiB, 256, &received), nullptr);
  EXPECT_EQ(received, 0u);
  void* third = faulty.Alloc(kMiB, 256, &received);
  EXPECT_NE(third, nullptr);
  faulty.SetFailAlways(true);
  EXPECT_EQ(faulty.Alloc(256, 256, &received), nullptr);
  faulty.SetFailAlways(false);
  EXPECT_EQ(faulty.Alloc(128 * kMiB, 256, &received),
            nullptr);  // a real failure
  EXPECT_EQ(faulty.alloc_calls(), 5);
  EXPECT_EQ(faulty.failed_allocs(), 3);
  EXPECT_EQ(faulty.live_regions(), 2u);
  faulty.Free(first, kMiB);
  faulty.Free(first, kMiB);  // double free: counted, not passed on
  EXPECT_EQ(faulty.free_calls(), 2);
  EXPECT_EQ(faulty.bad_frees(), 1);
  EXPECT_EQ(
      static_cast<SimulatedSubAllocator&>(faulty.wrapped()).misuse_count(), 0);
}

TEST(FaultInjectingSubAllocatorTest, HandsBackLessThanAsked) {
  FaultInjectingSubAllocator faulty(
      std::make_unique<SimulatedSubAllocator>(64 * kMiB));
  faulty.SetShortfall(4096);
  size_t received = 0;
  void* region = faulty.Alloc(kMiB, 256, &received);
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(received, kMiB - 4096);
  EXPECT_EQ(faulty.live_bytes(), kMiB - 4096);
  faulty.Free(region, received);
  EXPECT_EQ(faulty.bad_frees(), 0);
  auto& wrapped = static_cast<SimulatedSubAllocator&>(faulty.wrapped());
  EXPECT_EQ(wrapped.bytes_in_use(), 0u);  // the full region went back
  EXPECT_EQ(wrapped.misuse_count(), 0);
}

// The registry's parameters, spelled out for each call below.
SubAllocatorParams Params(uint64_t capacity, bool coalescing) {
  SubAllocatorParams params;
  params.capacity = capacity;
  params.coalescing = coalescing;
  return params;
}

TEST(SubAllocatorRegistryTest, CreatesEachKind) {
  std::vector<std::string_view> names;
  for (const SubAllocatorInfo& info : SubAllocatorKinds())
    names.push_back(info.name);
  EXPECT_THAT(names, ElementsAre("host", "simulated", "vmm"));
  for (std::string_view kind : names) {
    absl::StatusOr<std::unique_ptr<SubAllocator>> upstream =
        CreateSubAllocator(kind, Params(80 * kGiB, /*coalescing=*/false));
    ASSERT_TRUE(upstream.ok()) << upstream.status();
    EXPECT_EQ((*upstream)->Name(), kind);
  }
  // 64 GiB rather than 1 TiB: ThreadSanitizer builds cannot reserve a terabyte.
  auto simulated =
      CreateSubAllocator("simulated", Params(64 * kGiB, /*coalescing=*/true));
  ASSERT_TRUE(simulated.ok());
  EXPECT_TRUE((*simulated)->SupportsCoalescing());
  auto vmm = CreateSubAllocator("vmm", Params(kGiB, /*coalescing=*/false));
  ASSERT_TRUE(vmm.ok());
  EXPECT_TRUE((*vmm)->SupportsCoalescing());
}

TEST(SubAllocatorRegistryTest, ExplainsBadRequests) {
  absl::StatusOr<std::unique_ptr<SubAllocator>> unknown =
      CreateSubAllocator("cuda", Params(kGiB, false));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(unknown.status().message()),
      HasSubstr(
          "unknown sub-allocator kind 'cuda' (known: host, simulated, vmm)"));
  EXPECT_THAT(
      std::string(
          CreateSubAllocator("host", Params(0, true)).status().message()),
      HasSubstr("cannot coalesce"));
  EXPECT_THAT(
      std::string(
          CreateSubAllocator("simulated", Params(0, false)).status().message()),
      HasSubstr("capacity > 0"));
  EXPECT_FALSE(CreateSubAllocator("vmm", Params(0, false)).ok());
  EXPECT_FALSE(
      CreateSubAllocator("simulated", Params(uint64_t{1} << 62, false)).ok());
}

}  // namespace
}  // namespace tensormem
