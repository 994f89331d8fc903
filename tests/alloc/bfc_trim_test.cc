// Giving free memory back on request (BfcAllocator::TrimFreeMemory): free
// regions, the whole granules of holes and of a region's free tail, and
// taking decommitted address space again by AllocateAt.
#include <memory>

#include "alloc/bfc_test_util.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using testing::DecommittedBytes;
using testing::MakeBfcOver;
using testing::PoolBytes;

// TrimFreeMemory gives back free regions and the whole granules of holes;
// the address space they held serves again.
TEST(BfcTrim, GivesBackHolesAndTheAddressSpaceServesAgain) {
  auto allocator = MakeBfcOver(
      std::make_unique<SimulatedSubAllocator>(64 * kMiB), "tight", 64 * kMiB);
  void* a = allocator->Allocate(8 * kMiB);
  void* b = allocator->Allocate(kMiB);
  void* c = allocator->Allocate(8 * kMiB);
  ASSERT_NE(c, nullptr);
  allocator->Deallocate(a);
  EXPECT_TRUE(allocator->TrimFreeMemory());
  EXPECT_EQ(PoolBytes(*allocator), 10 * kMiB);  // b's granule and c
  EXPECT_FALSE(allocator->TrimFreeMemory());    // nothing more to give
  allocator->Deallocate(b);
  allocator->Deallocate(c);
  allocator->TrimFreeMemory();
  EXPECT_EQ(PoolBytes(*allocator), 0u);
  // Everything went back: the whole limit can be had again.
  for (int round = 0; round < 4; ++round) {
    void* big = allocator->Allocate(60 * kMiB);
    ASSERT_NE(big, nullptr)
        << "round " << round << ": " << allocator->LastFailureReport();
    allocator->Deallocate(big);
    allocator->TrimFreeMemory();
  }
  EXPECT_TRUE(allocator->CheckInvariants().ok());
}

// One 8 MiB region holding a 1 MiB block at its start (`head`): the rest is
// its free tail.
struct FreeTailScenario {
  FreeTailScenario()
      : allocator(MakeBfcOver(std::make_unique<SimulatedSubAllocator>(
                                  64 * kMiB, /*coalescing=*/true),
                              "tight", 64 * kMiB)) {
    void* whole = allocator->Allocate(8 * kMiB);
    EXPECT_NE(whole, nullptr);
    allocator->Deallocate(whole);
    head = static_cast<char*>(allocator->Allocate(kMiB));
    EXPECT_EQ(head, whole);
  }
  std::unique_ptr<BfcAllocator> allocator;
  char* head = nullptr;
};

// A region's free tail gives back its whole granules too (growth, which
// extends regions, leaves tails alone), and serves again when needed.
TEST(BfcTrim, GivesBackTheWholeGranulesOfAFreeTail) {
  FreeTailScenario scenario;
  BfcAllocator* allocator = scenario.allocator.get();
  EXPECT_EQ(PoolBytes(*allocator), 8 * kMiB);
  EXPECT_TRUE(allocator->TrimFreeMemory());
  EXPECT_EQ(PoolBytes(*allocator), 2 * kMiB);  // head's granule
  EXPECT_EQ(DecommittedBytes(*allocator), 6 * kMiB);
  void* again = allocator->Allocate(6 * kMiB);
  ASSERT_NE(again, nullptr) << allocator->LastFailureReport();
  EXPECT_EQ(PoolBytes(*allocator), 8 * kMiB);
  allocator->Deallocate(again);
  allocator->Deallocate(scenario.head);
  EXPECT_TRUE(allocator->CheckInvariants().ok());
}

// AllocateAt into decommitted address space commits the granules under the
// block again, and only those.
TEST(BfcTrim, AllocateAtCommitsTheGranulesUnderTheBlockAgain) {
  FreeTailScenario scenario;
  BfcAllocator* allocator = scenario.allocator.get();
  char* head = scenario.head;
  allocator->TrimFreeMemory();
  ASSERT_EQ(DecommittedBytes(*allocator), 6 * kMiB);  // [2 MiB, 8 MiB)
  void* at = allocator->AllocateAt(head + 3 * kMiB, kMiB + 4096);
  ASSERT_EQ(at, head + 3 * kMiB);
  EXPECT_EQ(PoolBytes(*allocator), 6 * kMiB);  // [0, 2) and [2, 6)
  EXPECT_EQ(DecommittedBytes(*allocator), 2 * kMiB);
  // Past the decommitted stretch's end: refused, nothing committed.
  EXPECT_EQ(allocator->AllocateAt(head + 7 * kMiB, 2 * kMiB), nullptr);
  EXPECT_EQ(PoolBytes(*allocator), 6 * kMiB);
  EXPECT_TRUE(allocator->CheckInvariants().ok())
      << allocator->CheckInvariants();
  allocator->Deallocate(at);
  allocator->Deallocate(head);
  EXPECT_TRUE(allocator->CheckInvariants().ok())
      << allocator->CheckInvariants();
}

}  // namespace
}  // namespace tensormem
