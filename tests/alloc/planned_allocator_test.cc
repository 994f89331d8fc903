// The planned policy: loops found and served from a plan, every deviation
// served by the fallback, and never more memory than `tight`.
#include "tensormem/alloc/planned_allocator.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "alloc/loop_workloads.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using testing::AsPlanned;
using testing::BuildForLoops;
using testing::LoopCall;
using testing::LoopDriver;
using testing::TrainingStep;

// Weights that live throughout, then `steps` training steps; the first step
// also makes optimizer state (so it differs from the others).
void Train(Allocator& allocator, LoopDriver& driver, int steps,
           uint32_t seed = 7, int layers = 12) {
  for (int w = 0; w < 4; ++w) driver.Allocate(-1 - w, 24 * kMiB);
  for (int step = 0; step < steps; ++step) {
    if (step == 0) driver.Allocate(-100, 48 * kMiB);  // optimizer state
    driver.Run(TrainingStep(layers, seed, 16 * kMiB, 0));
  }
  (void)allocator;
}

TEST(PlannedAllocatorTest, LearnsATrainingLoopAndServesItFromThePlan) {
  BuiltAllocator built = BuildForLoops("planned", "planning:inline");
  PlannedAllocator& planned = AsPlanned(built);
  LoopDriver driver(planned);
  Train(planned, driver, 8);
  const PlannedAllocator::LoopStatus status = planned.loop_status();
  EXPECT_EQ(status.plans_taken_over, 1);
  EXPECT_EQ(status.mismatches, 0);
  EXPECT_GE(status.planned_iterations, 3);
  EXPECT_TRUE(status.serving);
  EXPECT_EQ(status.period, 36u);             // 12 layers x 3 allocations
  EXPECT_EQ(status.iterations_per_plan, 1);  // nothing outlives a step
  EXPECT_GT(status.arena_blocks, 0);
  EXPECT_TRUE(planned.fallback().CheckInvariants().ok());

  const AllocatorStats stats = *planned.GetStats();
  ASSERT_TRUE(stats.steady_peak_pool_bytes.has_value());
  ASSERT_TRUE(stats.steady_peak_bytes_requested.has_value());
  // Steady state: within 1% of live bytes plus the fallback's partial
  // granule.
  EXPECT_LE(*stats.steady_peak_pool_bytes,
            *stats.steady_peak_bytes_requested * 1.01 + 2 * kMiB);
}

TEST(PlannedAllocatorTest, SteadyStateHoldsNoMoreThanTight) {
  BuiltAllocator planned = BuildForLoops("planned", "planning:inline");
  BuiltAllocator tight = BuildForLoops("tight");
  {
    LoopDriver planned_driver(*planned.allocator);
    LoopDriver tight_driver(*tight.allocator);
    Train(*planned.allocator, planned_driver, 8, 3);
    Train(*tight.allocator, tight_driver, 8, 3);
  }
  const AllocatorStats planned_stats = *planned.allocator->GetStats();
  const AllocatorStats tight_stats = *tight.allocator->GetStats();
  EXPECT_LE(*planned_stats.steady_peak_pool_bytes, tight_stats.peak_pool_bytes);
  EXPECT_LE(planned_stats.peak_pool_bytes,
            tight_stats.peak_pool_bytes + 2 * kMiB);
  EXPECT_EQ(planned_stats.bytes_in_use, 0u);
  EXPECT_EQ(planned_stats.num_allocs, tight_stats.num_allocs);
}

// A step's output kept until the next step's output replaces it (a Python
// variable bound again: the new block is made before the old one is freed)
// outlives its iteration, so the fallback serves it. Taking over must leave
// room for two of them beside the arena, or not take over at all: measured
// on a real GPT-2 training loop, the plan held 1.09x live where tight held
// 1.003x.
TEST(PlannedAllocatorTest, AnOutputKeptIntoTheNextStepNeverCostsMoreThanTight) {
  constexpr int kLayers = 24;
  constexpr uint64_t kOutput = 48 * kMiB;
  auto run = [&](Allocator& allocator) {
    LoopDriver driver(allocator);
    for (int w = 0; w < 4; ++w) driver.Allocate(-1 - w, 24 * kMiB);
    for (int step = 0; step < 10; ++step) {
      std::vector<LoopCall> calls = TrainingStep(kLayers, 7, 16 * kMiB, 0);
      // Made half-way through the backward pass, past the arena's peak.
      const auto half_backward = calls.begin() + 4 * kLayers;
      calls.insert(half_backward,
                   {{true, 1000 + step, kOutput}, {false, 1000 + step - 1, 0}});
      driver.Run(calls);
    }
    return *allocator.GetStats();
  };
  BuiltAllocator planned = BuildForLoops("planned", "planning:inline");
  BuiltAllocator tight = BuildForLoops("tight");
  const AllocatorStats planned_stats = run(*planned.allocator);
  const AllocatorStats tight_stats = run(*tight.allocator);
  EXPECT_LE(planned_stats.peak_pool_bytes,
            tight_stats.peak_pool_bytes + 2 * kMiB);
  if (planned_stats.steady_peak_pool_bytes) {
    EXPECT_LE(*planned_stats.steady_peak_pool_bytes,
              tight_stats.peak_pool_bytes + 2 * kMiB);
  }
  EXPECT_TRUE(AsPlanned(planned).fallback().CheckInvariants().ok());
}

TEST(PlannedAllocatorTest, MarkedIterationsAreTheLoop) {
  BuiltAllocator built = BuildForLoops("planned", "planning:inline");
  PlannedAllocator& planned = AsPlanned(built);
  LoopDriver driver(planned);
  driver.Allocate(-1, 64 * kMiB);
  for (int step = 0; step < 6; ++step) {
    planned.MarkIteration();
    driver.Run(TrainingStep(5, 11, 8 * kMiB, 0));
  }
  planned.MarkIteration();
  const PlannedAllocator::LoopStatus status = planned.loop_status();
  EXPECT_EQ(status.plans_taken_over, 1);
  EXPECT_EQ(status.period, 15u);
  // Marks 1-3 bound the two iterations compared; the plan follows the next
  // without serving it, and serves from mark 4.
  EXPECT_EQ(status.planned_iterations, 3);
  EXPECT_EQ(status.mismatches, 0);
}

// A request that differs from the plan, at every position of an iteration:
// the fallback serves it, the plan ends, nothing overlaps, and the loop is
// learnt again once it repeats.
TEST(PlannedAllocatorTest, AnyDifferentRequestEndsThePlanSafely) {
  const std::vector<LoopCall> step = TrainingStep(4, 5, 4 * kMiB, 0);
  for (size_t changed = 0; changed < step.size(); ++changed) {
    if (!step[changed].alloc) continue;
    BuiltAllocator built = BuildForLoops("planned", "planning:inline");
    PlannedAllocator& planned = AsPlanned(built);
    LoopDriver driver(planned);
    for (int i = 0; i < 6; ++i) driver.Run(step);
    ASSERT_TRUE(planned.loop_status().serving) << "position " << changed;
    std::vector<LoopCall> different = step;
    different[changed].bytes += 4096;
    driver.Run(different);
    EXPECT_EQ(planned.loop_status().mismatches, 1) << "position " << changed;
    for (int i = 0; i < 6; ++i) driver.Run(step);
    const PlannedAllocator::LoopStatus status = planned.loop_status();
    EXPECT_EQ(status.plans_taken_over, 2) << "position " << changed;
    EXPECT_TRUE(status.serving) << "position " << changed;
    EXPECT_TRUE(planned.fallback().CheckInvariants().ok());
  }
}

TEST(PlannedAllocatorTest, ANewLoopIsLearntAfterTheOldOneEnds) {
  BuiltAllocator built = BuildForLoops("planned", "planning:inline");
  PlannedAllocator& planned = AsPlanned(built);
  LoopDriver driver(planned);
  for (int i = 0; i < 6; ++i) driver.Run(TrainingStep(6, 1, 8 * kMiB, 0));
  const uint64_t first_arena = planned.loop_status().arena_bytes;
  // A larger batch: every size changes.
  for (int i = 0; i < 6; ++i) driver.Run(TrainingStep(6, 1, 12 * kMiB, 0));
  const PlannedAllocator::LoopStatus status = planned.loop_status();
  EXPECT_EQ(status.plans_taken_over, 2);
  EXPECT_EQ(status.mismatches, 1);
  EXPECT_TRUE(status.serving);
  EXPECT_GT(status.arena_bytes, first_arena);
}

// A plan that ends gives its arena back at once: blocks still live in it
// stay where they are, as the fallback's, and a new loop's plan serves
// without waiting for their frees.
TEST(PlannedAllocatorTest, AnEndedPlanGivesItsArenaBackAtOnce) {
  BuiltAllocator built = BuildForLoops("planned", "planning:inline");
  PlannedAllocator& planned = AsPlanned(built);
  LoopDriver driver(planned);
  const std::vector<LoopCall> first = TrainingStep(4, 1, 4 * kMiB, 0);
  for (int i = 0; i < 6; ++i) driver.Run(first);
  ASSERT_TRUE(planned.loop_status().serving);
  void* held = driver.Allocate(100, first[0].bytes);  // an arena block
  ASSERT_NE(held, nullptr);
  const std::vector<LoopCall> second = TrainingStep(4, 2, 4 * kMiB, 0);
  driver.Run(second);
  EXPECT_FALSE(planned.loop_status().serving);
  EXPECT_EQ(planned.loop_status().arena_bytes, 0u);
  EXPECT_EQ(planned.fallback().RequestedSize(held), first[0].bytes);
  EXPECT_EQ(planned.RequestedSize(held), first[0].bytes);
  EXPECT_TRUE(planned.fallback().CheckInvariants().ok());
  // The driver checks that no block lands on the held one.
  for (int i = 0; i < 6; ++i) driver.Run(second);
  const PlannedAllocator::LoopStatus status = planned.loop_status();
  EXPECT_TRUE(status.serving);
  EXPECT_EQ(status.plans_taken_over, 2);
  EXPECT_EQ(status.period, 12u);  // the loop itself, not two iterations of it
  driver.Free(100);
  EXPECT_FALSE(planned.CheckedDeallocate(held).ok());  // freed once only
  EXPECT_TRUE(planned.fallback().CheckInvariants().ok());
}

TEST(PlannedAllocatorTest, FreesOutOfOrderAreServedByTheFallback) {
  BuiltAllocator built = BuildForLoops("planned", "planning:inline");
  PlannedAllocator& planned = AsPlanned(built);
  LoopDriver driver(planned);
  const std::vector<LoopCall> step = TrainingStep(6, 9, 8 * kMiB, 0);
  for (int i = 0; i < 6; ++i) driver.Run(step);
  ASSERT_TRUE(planned.loop_status().serving);
  // Hold the first temporary until the end: places planned after its free
  // may still be taken by it.
  std::vector<LoopCall> late = step;
  auto first_free = std::find_if(
      late.begin(), late.end(), [&](auto& c) { return !c.alloc && c.id == 0; });
  ASSERT_NE(first_free, late.end());
  late.erase(first_free);
  late.push_back({false, 0, 0});
  for (int i = 0; i < 3; ++i) driver.Run(late);
  const PlannedAllocator::LoopStatus status = planned.loop_status();
  EXPECT_GT(status.late_frees, 0);
  EXPECT_EQ(status.mismatches, 0);  // the requests themselves still match
  EXPECT_TRUE(planned.fallback().CheckInvariants().ok());
}

TEST(PlannedAllocatorTest, WithoutALoopItHoldsWhatTightHolds) {
  BuiltAllocator planned = BuildForLoops("planned", "planning:inline");
  BuiltAllocator tight = BuildForLoops("tight");
  for (BuiltAllocator* built : {&planned, &tight}) {
    std::mt19937 random(42);
    LoopDriver driver(*built->allocator);
    std::vector<int> live;
    for (int i = 0; i < 4000; ++i) {
      if (!live.empty() && random() % 2 == 0) {
        const size_t victim = random() % live.size();
        driver.Free(live[victim]);
        live[victim] = live.back();
        live.pop_back();
      } else {
        driver.Allocate(i, 1 + random() % (4 * kMiB));
        live.push_back(i);
      }
    }
  }
  const AllocatorStats planned_stats = *planned.allocator->GetStats();
  const AllocatorStats tight_stats = *tight.allocator->GetStats();
  EXPECT_EQ(AsPlanned(planned).loop_status().plans_taken_over, 0);
  EXPECT_EQ(planned_stats.peak_pool_bytes, tight_stats.peak_pool_bytes);
}

TEST(PlannedAllocatorTest, MisuseIsReportedAndChangesNothing) {
  BuiltAllocator built = BuildForLoops("planned", "planning:inline");
  PlannedAllocator& planned = AsPlanned(built);
  const std::vector<LoopCall> step = TrainingStep(3, 2, kMiB, 0);
  LoopDriver driver(planned);
  for (int i = 0; i < 6; ++i) driver.Run(step);
  ASSERT_TRUE(planned.loop_status().serving);
  void* arena_block = planned.Allocate(step[0].bytes);
  ASSERT_NE(arena_block, nullptr);
  ASSERT_TRUE(planned.CheckedDeallocate(arena_block).ok());
  const absl::Status twice = planned.CheckedDeallocate(arena_block);
  EXPECT_FALSE(twice.ok());
  EXPECT_NE(twice.message().find("not a live block"), std::string::npos)
      << twice;
  int on_stack = 0;
  EXPECT_FALSE(planned.CheckedDeallocate(&on_stack).ok());
  EXPECT_EQ(planned.GetStats()->bytes_in_use, 0u);
  EXPECT_TRUE(planned.fallback().CheckInvariants().ok());
}

TEST(PlannedAllocatorTest, ThreadsShareItSafely) {
  BuiltAllocator built = BuildForLoops("planned");
  PlannedAllocator& planned = AsPlanned(built);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&planned, t] {
      // Each thread runs its own loop: interleaved, the calls do not repeat.
      const std::vector<LoopCall> step = TrainingStep(4, t, 256 * kKiB, 0);
      std::vector<void*> blocks(64, nullptr);
      for (int i = 0; i < 40; ++i) {
        for (const LoopCall& call : step) {
          if (call.alloc) {
            blocks[call.id] = planned.Allocate(call.bytes);
            ASSERT_NE(blocks[call.id], nullptr);
          } else {
            ASSERT_TRUE(planned.CheckedDeallocate(blocks[call.id]).ok());
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(planned.GetStats()->bytes_in_use, 0u);
  EXPECT_TRUE(planned.fallback().CheckInvariants().ok());
}

// One thread runs a loop that the plan serves; another frees its blocks
// (a producer and a consumer), a third allocates and frees on its own.
TEST(PlannedAllocatorTest, BlocksOfAServedLoopMayBeFreedByAnotherThread) {
  BuiltAllocator built = BuildForLoops("planned", "planning:inline");
  PlannedAllocator& planned = AsPlanned(built);
  const std::vector<LoopCall> step = TrainingStep(4, 8, kMiB, 0);
  {
    LoopDriver warm(planned);
    for (int i = 0; i < 6; ++i) warm.Run(step);
  }
  ASSERT_TRUE(planned.loop_status().serving);
  std::mutex mutex;
  std::vector<void*> handed_over;
  std::atomic<bool> done = false;
  std::thread consumer([&] {
    while (true) {
      // Read before taking the blocks: once set, every block was handed over.
      const bool finished = done;
      std::vector<void*> blocks;
      {
        std::lock_guard lock(mutex);
        blocks.swap(handed_over);
      }
      for (void* block : blocks)
        EXPECT_TRUE(planned.CheckedDeallocate(block).ok());
      if (finished && blocks.empty()) return;
    }
  });
  std::thread bystander([&] {
    for (int i = 0; i < 2000; ++i) {
      void* block = planned.Allocate(4096 + i);
      ASSERT_NE(block, nullptr);
      planned.Deallocate(block);
    }
  });
  for (int i = 0; i < 20; ++i) {
    std::vector<void*> blocks(64, nullptr);
    for (const LoopCall& call : step) {
      if (call.alloc) {
        blocks[call.id] = planned.Allocate(call.bytes);
        ASSERT_NE(blocks[call.id], nullptr);
      } else {
        std::lock_guard lock(mutex);
        handed_over.push_back(blocks[call.id]);
      }
    }
  }
  done = true;
  consumer.join();
  bystander.join();
  EXPECT_EQ(planned.GetStats()->bytes_in_use, 0u);
  EXPECT_GT(planned.loop_status().arena_blocks, 0);
  EXPECT_TRUE(planned.fallback().CheckInvariants().ok());
}

TEST(PlannedAllocatorTest, BackgroundPlanningTakesOverWithoutBlocking) {
  BuiltAllocator built = BuildForLoops("planned");
  PlannedAllocator& planned = AsPlanned(built);
  LoopDriver driver(planned);
  const std::vector<LoopCall> step = TrainingStep(8, 4, 2 * kMiB, 0);
  // The planner runs on its own thread and a plan is taken at an iteration's
  // end: keep iterating, pausing between iterations so that a loaded machine
  // still schedules the planner (the deadline only bounds a failure).
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (!planned.loop_status().serving && absl::Now() < deadline) {
    driver.Run(step);
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_TRUE(planned.loop_status().serving);
  for (int i = 0; i < 3; ++i) driver.Run(step);
  EXPECT_EQ(planned.loop_status().mismatches, 0);
}

TEST(PlannedAllocatorTest, PlanningModeIsChecked) {
  AllocatorSpec spec;
  ASSERT_TRUE(SetAllocatorOption(spec, "policy", "planned").ok());
  ASSERT_TRUE(SetAllocatorOption(spec, "config", "planning:sometimes").ok());
  const absl::Status status = ValidateAllocatorSpec(spec);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("background, inline"), std::string::npos)
      << status;
}

}  // namespace
}  // namespace tensormem
