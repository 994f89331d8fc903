// The planned policy placed in the pool (loop_placement.h): the blocks live
// when a plan takes over stay where they are, and places the plan reuses
// are the plan's only once their blocks were freed.
#include <chrono>
#include <thread>
#include <vector>

#include "alloc/loop_workloads.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/alloc/planned_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using testing::LoopCall;
using testing::LoopDriver;
using testing::TrainingStep;

BuiltAllocator BuildPlannedInline() {
  AllocatorSpec spec;
  EXPECT_TRUE(SetAllocatorOption(spec, "policy", "planned").ok());
  EXPECT_TRUE(SetAllocatorOption(spec, "memory_limit", "16G").ok());
  EXPECT_TRUE(SetAllocatorOption(spec, "config", "planning:inline").ok());
  absl::StatusOr<BuiltAllocator> built = CreateAllocator(spec);
  EXPECT_TRUE(built.ok()) << built.status();
  return *std::move(built);
}

// Gradients kept until the next step's forward pass is done: the quietest
// point is the step's start, so each gradient wraps, and the plan, placed
// around the blocks live when it takes over, puts each new gradient where
// its previous instance lies. Until that one is freed, the place is not
// the plan's: freed late (after the whole step) in any step, the new
// gradients go to the fallback, and no block ever lands on a live one
// (the driver checks every allocation).
TEST(PlannedInPlaceTest, APlaceHeldLongerThanPlannedGoesToTheFallback) {
  constexpr int kLayers = 6;
  int64_t late_in_place = 0;
  for (int late_step = 4; late_step < 10; ++late_step) {
    BuiltAllocator built = BuildPlannedInline();
    auto& planned = dynamic_cast<PlannedAllocator&>(*built.allocator);
    LoopDriver driver(planned);
    for (int w = 0; w < 3; ++w) driver.Allocate(-1 - w, 20 * kMiB);
    std::vector<int> kept;
    for (int step = 0; step < 12; ++step) {
      std::vector<LoopCall> calls =
          TrainingStep(kLayers, 5, 8 * kMiB, 1000 * (step + 1));
      calls.resize(calls.size() - kLayers);  // the gradients' frees
      std::vector<LoopCall> frees;
      for (int gradient : kept) frees.push_back({false, gradient, 0});
      const auto at =
          step == late_step ? calls.end() : calls.begin() + 3 * kLayers - 1;
      calls.insert(at, frees.begin(), frees.end());
      const PlannedAllocator::LoopStatus before = planned.loop_status();
      driver.Run(calls);
      const PlannedAllocator::LoopStatus after = planned.loop_status();
      if (step == late_step && after.plans_placed_in_pool > 0)
        late_in_place += after.late_frees - before.late_frees;
      // TrainingStep numbers the gradients after the forward pass's blocks.
      kept.clear();
      for (int g = 0; g < kLayers; ++g)
        kept.push_back(1000 * (step + 1) + 2 * kLayers + g);
    }
    EXPECT_TRUE(planned.fallback().CheckInvariants().ok());
    EXPECT_GE(planned.loop_status().plans_placed_in_pool, 1) << late_step;
  }
  EXPECT_GT(late_in_place, 0);
}

// With planning in the background (the default), the placement in the pool
// is made off the allocating thread too; the plan takes over at a later
// boundary where the blocks it was placed around are still where they were.
TEST(PlannedInPlaceTest, PlacedInTheBackgroundItTakesOverAtALaterBoundary) {
  AllocatorSpec spec;
  ASSERT_TRUE(SetAllocatorOption(spec, "policy", "planned").ok());
  ASSERT_TRUE(SetAllocatorOption(spec, "memory_limit", "16G").ok());
  absl::StatusOr<BuiltAllocator> built = CreateAllocator(spec);
  ASSERT_TRUE(built.ok()) << built.status();
  auto& planned = dynamic_cast<PlannedAllocator&>(*built->allocator);
  LoopDriver driver(planned);
  for (int w = 0; w < 3; ++w) driver.Allocate(-1 - w, 20 * kMiB);
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::minutes(2);
  int step = 0;
  for (; std::chrono::steady_clock::now() < give_up; ++step) {
    driver.Run(TrainingStep(6, 5, 8 * kMiB, 1000 * (step + 1)));
    if (planned.loop_status().planned_iterations >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const PlannedAllocator::LoopStatus status = planned.loop_status();
  EXPECT_GE(status.planned_iterations, 3) << "after " << step << " steps";
  EXPECT_EQ(status.plans_placed_in_pool, status.plans_taken_over);
  EXPECT_EQ(status.mismatches, 0);
  EXPECT_TRUE(planned.fallback().CheckInvariants().ok());
}

}  // namespace
}  // namespace tensormem
