// The optimal planner in counted time (OptimalPlanOptions::counted_time):
// the clock moves only with the work counted, so a plan cut short by its
// time limit is the same on every run.
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "plan/solver/solver_clock.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/solver/optimal_planner.h"

namespace tensormem {
namespace {

using solver_internal::CountedTime;
using solver_internal::CountedTimeScope;
using solver_internal::SolverClock;

// `n` buffers of 1-5,000 bytes over `horizon` steps, each living up to a
// third of it.
BufferSet RandomSet(uint32_t seed, int n, int horizon) {
  std::mt19937 random(seed);
  BufferSet set;
  for (int i = 0; i < n; ++i) {
    const int64_t lower = random() % horizon;
    set.buffers.push_back(
        {.id = static_cast<uint64_t>(i),
         .lower = lower,
         .upper = lower + 1 + static_cast<int64_t>(random() % (horizon / 3)),
         .size = 1 + random() % 5000});
  }
  return set;
}

std::vector<uint64_t> Offsets(const OptimalPlanResult& result) {
  std::vector<uint64_t> offsets;
  for (const Buffer& buffer : result.placed.buffers)
    offsets.push_back(*buffer.offset);
  return offsets;
}

TEST(SolverClockTest, CountedTimeMovesOnlyWithTheWorkCounted) {
  SolverClock::Count(1000);  // on the wall clock: nothing to count
  EXPECT_EQ(SolverClock::Counted(), nullptr);
  CountedTime counted;
  {
    const CountedTimeScope scope(&counted);
    EXPECT_EQ(SolverClock::Counted(), &counted);
    const SolverClock::time_point start = SolverClock::Now();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_EQ(SolverClock::Now(), start);
    SolverClock::Count(5);
    EXPECT_EQ(SolverClock::Now() - start, 5 * CountedTime::kPerStep);
    {
      const CountedTimeScope wall(nullptr);  // a scope within goes back
      EXPECT_EQ(SolverClock::Counted(), nullptr);
      SolverClock::Count(7);
    }
    EXPECT_EQ(SolverClock::Now() - start, 5 * CountedTime::kPerStep);
    // A helper thread on the caller's clock adds to its count.
    std::thread helper(
        solver_internal::WithTheCallersClock([] { SolverClock::Count(10); }));
    helper.join();
    EXPECT_EQ(SolverClock::Now() - start, 15 * CountedTime::kPerStep);
  }
  EXPECT_EQ(SolverClock::Counted(), nullptr);
}

// Three runs cut short by the limit give the same plan, whichever of the
// planner's paths it takes; the wall clock would stop each run elsewhere.
void ExpectTheSamePlanEveryRun(const BufferSet& set, OptimalPlanOptions options,
                               const char* path) {
  SCOPED_TRACE(path);
  options.counted_time = true;
  absl::StatusOr<OptimalPlanResult> first = PlanOptimal(set, options);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(CheckPlacement(first->placed, options.alignment).ok());
  // The limit cut it short, after the start: counted time ran out between
  // two improvements, before the bound.
  EXPECT_NE(first->method, "start");
  EXPECT_FALSE(first->proven_optimal);
  EXPECT_GE(first->seconds, options.time_limit_seconds);
  EXPECT_LT(first->seconds, 2 * options.time_limit_seconds);
  for (int run = 0; run < 2; ++run) {
    absl::StatusOr<OptimalPlanResult> again = PlanOptimal(set, options);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->total_size, first->total_size);
    EXPECT_EQ(again->method, first->method);
    EXPECT_EQ(again->seconds_to_best, first->seconds_to_best);
    EXPECT_EQ(Offsets(*again), Offsets(*first));
  }
}

TEST(CountedTimeTest, ASearchCutShortIsTheSameEveryRun) {
  OptimalPlanOptions options;
  options.alignment = 16;
  options.time_limit_seconds = 0.004;  // a few hundred search nodes
  ExpectTheSamePlanEveryRun(RandomSet(1, 300, 200), options, "search");
}

// The placement of a learnt iteration around live blocks takes this path.
TEST(CountedTimeTest, APlanAroundKeptOffsetsIsTheSameEveryRun) {
  BufferSet set = RandomSet(3, 1000, 400);
  OptimalPlanOptions options;
  options.alignment = 16;
  options.time_limit_seconds = 0;
  absl::StatusOr<OptimalPlanResult> greedy = PlanOptimal(set, options);
  ASSERT_TRUE(greedy.ok());
  // A quarter of the lower half is kept: the rest goes around and above.
  std::mt19937 random(3);
  for (size_t i = 0; i < set.buffers.size(); ++i) {
    const uint64_t offset = *greedy->placed.buffers[i].offset;
    if (random() % 4 == 0 && 2 * offset < greedy->total_size)
      set.buffers[i].offset = offset;
  }
  options.keep_given_offsets = true;
  options.time_limit_seconds = 0.05;  // some 60 orders of 1,000 buffers
  ExpectTheSamePlanEveryRun(set, options, "kept offsets");
}

}  // namespace
}  // namespace tensormem
