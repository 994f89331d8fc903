// What the planned policy says of the plans it found: each one took over,
// found no room, did not repeat, or is still waiting, and the statistics say
// the same as the loop status (a plan without room: gpu_snapshot_test.cc, on
// real training loops).

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

}  // namespace
}  // namespace tensormem
