// What the planned policy says of the plans it found: each one took over,
// found no room, did not repeat, or is still waiting, and the statistics say
// the same as the loop status (a plan without room: below, and
// gpu_snapshot_test.cc on real training loops); a plan without room changes
// nothing.

#include <cstdint>
#include <vector>

#include "alloc/loop_workloads.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/planned_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using testing::AsPlanned;
using testing::BuildForLoops;
using testing::LoopDriver;
using testing::TrainingStep;

// The loop status and the statistics agree, and every plan found is in
// exactly one of the four outcomes.
AllocatorStats::LoopPlans Accounted(PlannedAllocator& planned) {
  const PlannedAllocator::LoopStatus status = planned.loop_status();
  const std::optional<AllocatorStats::LoopPlans> plans =
      planned.GetStats()->loop_plans;
  EXPECT_TRUE(plans.has_value());
  if (!plans) return {};
  EXPECT_EQ(plans->found, status.plans_found);
  EXPECT_EQ(plans->taken_over, status.plans_taken_over);
  EXPECT_EQ(plans->without_room, status.plans_without_room);
  EXPECT_EQ(plans->not_repeated, status.plans_not_repeated);
  EXPECT_EQ(plans->found, plans->taken_over + plans->without_room +
                              plans->not_repeated + plans->waiting);
  return *plans;
}

TEST(PlannedStatusTest, AServedLoopTookOver) {
  BuiltAllocator built = BuildForLoops("planned", "planning:inline");
  PlannedAllocator& planned = AsPlanned(built);
  LoopDriver driver(planned);
  for (int w = 0; w < 4; ++w) driver.Allocate(-1 - w, 24 * kMiB);
  for (int step = 0; step < 8; ++step)
    driver.Run(TrainingStep(12, 7, 16 * kMiB, 0));
  const AllocatorStats::LoopPlans plans = Accounted(planned);
  EXPECT_EQ(plans.found, 1);
  EXPECT_EQ(plans.taken_over, 1);
  EXPECT_EQ(plans.waiting, 0);
}

TEST(PlannedStatusTest, APlanIsWaitingUntilItHasFollowedAnIteration) {
  BuiltAllocator built = BuildForLoops("planned", "planning:inline");
  PlannedAllocator& planned = AsPlanned(built);
  LoopDriver driver(planned);
  // Marks 1-3 bound the two iterations compared: the plan is found at mark 3
  // and follows the next iteration before it may take over.
  for (int step = 0; step < 2; ++step) {
    planned.MarkIteration();
    driver.Run(TrainingStep(5, 11, 8 * kMiB, 0));
  }
  planned.MarkIteration();
  AllocatorStats::LoopPlans plans = Accounted(planned);
  EXPECT_EQ(plans.found, 1);
  EXPECT_EQ(plans.waiting, 1);
  // The iteration followed makes other requests: the plan is dropped.
  driver.Run(TrainingStep(5, 12, 8 * kMiB, 0));
  plans = Accounted(planned);
  EXPECT_EQ(plans.not_repeated, 1);
  EXPECT_EQ(plans.waiting, 0);
  EXPECT_EQ(plans.taken_over, 0);
}

TEST(PlannedStatusTest, OtherPoliciesHaveNoLoopPlans) {
  BuiltAllocator built = BuildForLoops("tight");
  EXPECT_FALSE(built.allocator->GetStats()->loop_plans.has_value());
}

// The calls of a loop that has no room to take over: a hole given back
// below a block that stays, another hole above it, a block that stays above
// that, and then steps whose output is freed only in the next one (a plan
// keeps its place through the whole step, beside the step's other blocks).
void NoRoomWorkload(LoopDriver& driver, std::vector<uint64_t>& trail,
                    const Allocator& allocator) {
  // The pool after every call, and where each block lands.
  uintptr_t base = 0;
  const auto allocate = [&](int id, uint64_t bytes) {
    const auto address =
        reinterpret_cast<uintptr_t>(driver.Allocate(id, bytes));
    if (base == 0) base = address;
    trail.push_back(address - base);
    trail.push_back(allocator.GetStats()->pool_bytes);
  };
  const auto free = [&](int id) {
    driver.Free(id);
    trail.push_back(allocator.GetStats()->pool_bytes);
  };
  allocate(10, 100 * kMiB);
  allocate(1, 1 * kMiB);  // stays
  free(10);
  allocate(11, 150 * kMiB);  // grows past the hole, given back
  allocate(2, 1 * kMiB);     // stays
  free(11);
  int output = 0;
  for (int step = 0; step < 24; ++step) {
    const int id = 100 + 10 * step;
    allocate(id, 100 * kMiB);
    free(output);
    allocate(output = id + 1, 90 * kMiB);
    free(id);
  }
}

// A plan without room leaves the fallback as tight would be: the same
// places and pool, call for call, and the same chunks at the end. (What an
// attempt that changed the fallback cost on real recordings:
// SharedSnapshotTest.PlannedNeverReservesMoreThanTight.)
TEST(PlannedStatusTest, APlanWithoutRoomChangesNothing) {
  std::vector<uint64_t> trails[2];
  for (int planned = 0; planned < 2; ++planned) {
    BuiltAllocator built = planned ? BuildForLoops("planned", "planning:inline")
                                   : BuildForLoops("tight");
    LoopDriver driver(*built.allocator);
    NoRoomWorkload(driver, trails[planned], *built.allocator);
    // And the chunks at the end: which are free, in use, given back.
    const BfcAllocator* bfc =
        planned ? &AsPlanned(built).fallback()
                : dynamic_cast<const BfcAllocator*>(built.allocator.get());
    ASSERT_NE(bfc, nullptr);
    for (const MemoryDump::Region& region : bfc->RecordMemoryDump().regions) {
      for (const MemoryDump::Chunk& chunk : region.chunks) {
        trails[planned].push_back(chunk.address - region.address);
        trails[planned].push_back(chunk.size);
        trails[planned].push_back(chunk.in_use + 2 * chunk.decommitted);
      }
    }
    if (planned) {
      const AllocatorStats::LoopPlans plans = Accounted(AsPlanned(built));
      EXPECT_EQ(plans.found, 1);
      EXPECT_EQ(plans.without_room, 1);
    }
  }
  EXPECT_EQ(trails[1], trails[0]);
}

}  // namespace
}  // namespace tensormem
