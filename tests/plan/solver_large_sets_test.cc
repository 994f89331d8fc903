// The optimal planner's path for large sets: the windowed greedy orders.
#include <atomic>
#include <chrono>
#include <string>

#include "gtest/gtest.h"
#include "plan/large_set_test_util.h"
#include "plan/solver/local_moves.h"
#include "plan/solver/windowed_orders.h"
#include "shared_data.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/offset_strategies.h"

namespace tensormem::solver_internal {
namespace {

using ::tensormem::testing::RandomRecords;

using Clock = std::chrono::steady_clock;

TEST(WindowedOrdersTest, VisitsWindowsInTimeOrderLongestFirst) {
  const std::vector<UsageRecord<>> records = {
      {.tensor_size = 5, .first_task = 12, .last_task = 13},  // window 1
      {.tensor_size = 1, .first_task = 3, .last_task = 4},    // window 0
      {.tensor_size = 1, .first_task = 7, .last_task = 30},   // window 0
      {.tensor_size = 9, .first_task = 1, .last_task = 2},    // window 0
      {.tensor_size = 2, .first_task = 0, .last_task = 1}};   // window 0
  // Forwards: windows of 10 tasks by first task; the longest first, then
  // the largest.
  EXPECT_EQ(WindowedVisitOrder(records, {.width = 10}),
            (std::vector<size_t>{2, 3, 4, 1, 0}));
  // Backwards: by last task, the latest window first.
  EXPECT_EQ(WindowedVisitOrder(records, {.width = 10, .backwards = true}),
            (std::vector<size_t>{2, 0, 3, 4, 1}));
  // A phase of 8 shifts the windows: buffers 3 and 4 (tasks 1 and 0, + 8)
  // stay in window 0, buffers 1 and 2 (tasks 3 and 7) move to window 1 and
  // buffer 0 (task 12) to window 2.
  EXPECT_EQ(WindowedVisitOrder(records, {.width = 10, .phase = 8}),
            (std::vector<size_t>{3, 4, 2, 1, 0}));
}

// Both ends count: a set from task 3 to task 9 spans 7 tasks.
TEST(WindowedOrdersTest, TaskSpanCountsFromTheFirstTaskToTheLast) {
  EXPECT_EQ(TaskSpan({}), 0u);
  EXPECT_EQ(TaskSpan({{.tensor_size = 4, .first_task = 5, .last_task = 5}}),
            1u);
  EXPECT_EQ(TaskSpan({{.tensor_size = 4, .first_task = 7, .last_task = 9},
                      {.tensor_size = 0, .first_task = 3, .last_task = 4}}),
            7u);
}

TEST(WindowedOrdersTest, FamilyCoversWidthsPhasesDirectionsAndRules) {
  const std::vector<WindowedOrder> family = WindowedOrderFamily(1000);
  EXPECT_EQ(family.size(), 48u);
  for (const WindowedOrder& order : family) {
    EXPECT_GE(order.width, 1000u / 128);
    EXPECT_LE(order.width, 1000u / 4);
  }
  // Tiny spans still get windows of at least one task.
  for (const WindowedOrder& order : WindowedOrderFamily(1))
    EXPECT_EQ(order.width, 1u);
}

TEST(WindowedOrdersTest, PlansAreValidAndNeverWorseThanTheStart) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    const std::vector<UsageRecord<>> records = RandomRecords(seed, 400, 300);
    for (const uint64_t alignment : {uint64_t{1}, uint64_t{64}}) {
      absl::StatusOr<BestFitResult> start = BestFitMulti(records, alignment);
      ASSERT_TRUE(start.ok());
      std::vector<uint64_t> offsets = start->offsets.offsets;
      const Clock::time_point before = Clock::now();
      // The family alone (the repairs have tests of their own).
      const WindowedOrdersOutcome outcome = ImproveByWindowedOrders(
          records, alignment, offsets,
          {.deadline = before + std::chrono::seconds(5)}, {.repair = false});
      const uint64_t total = outcome.total;
      EXPECT_LE(total, start->offsets.total_size) << seed;
      // The time of the improvement is reported only when there was one.
      EXPECT_EQ(total < start->offsets.total_size,
                outcome.improved_at.has_value());
      if (outcome.improved_at) {
        EXPECT_GE(*outcome.improved_at, before);
      }
      EXPECT_EQ(total, TotalSize(records, offsets));
      EXPECT_TRUE(CheckOffsets(records, {offsets, total}, alignment).ok());
    }
  }
}

TEST(WindowedOrdersTest, APassedDeadlineOrACancelKeepsThePlan) {
  const std::vector<UsageRecord<>> records = RandomRecords(7, 3000, 500);
  std::vector<size_t> visit(records.size());
  for (size_t i = 0; i < visit.size(); ++i) visit[i] = i;
  EXPECT_FALSE(
      PlaceInVisitOrder(records, visit, false, 1, {.deadline = Clock::now()})
          .has_value());
  const std::atomic<bool> cancelled = true;
  const StopWhen cancel = {.deadline = Clock::now() + std::chrono::hours(1),
                           .cancel = &cancelled};
  EXPECT_FALSE(PlaceInVisitOrder(records, visit, false, 1, cancel).has_value());
  // Another thread's plan was enough: stop too.
  const StopWhen enough = {.deadline = Clock::now() + std::chrono::hours(1),
                           .enough = &cancelled};
  EXPECT_FALSE(PlaceInVisitOrder(records, visit, false, 1, enough).has_value());
  absl::StatusOr<BestFitResult> start = BestFitMulti(records, 1);
  ASSERT_TRUE(start.ok());
  for (const StopWhen& stop : {StopWhen{.deadline = Clock::now()}, cancel}) {
    std::vector<uint64_t> offsets = start->offsets.offsets;
    EXPECT_EQ(ImproveByWindowedOrders(records, 1, offsets, stop).total,
              start->offsets.total_size);
    EXPECT_EQ(offsets, start->offsets.offsets);
  }
}

TEST(WindowedOrdersTest, StopsOnceAPlanReachesTheLowerBound) {
  const std::vector<UsageRecord<>> records = RandomRecords(3, 300, 200);
  // A valid but poor start: every buffer above the previous one.
  std::vector<uint64_t> start;
  uint64_t top = 0;
  for (const UsageRecord<>& r : records) {
    start.push_back(top);
    top += r.tensor_size;
  }
  TaskId first_task = records[0].first_task;
  TaskId last_task = records[0].last_task;
  for (const UsageRecord<>& r : records) {
    first_task = std::min(first_task, r.first_task);
    last_task = std::max(last_task, r.last_task);
  }
  const WindowedOrder first =
      WindowedOrderFamily(last_task - first_task + 1).front();
  std::optional<std::vector<uint64_t>> first_plan = PlaceInVisitOrder(
      records, WindowedVisitOrder(records, first), first.first_fit, 1,
      {.deadline = Clock::now() + std::chrono::seconds(5)});
  ASSERT_TRUE(first_plan.has_value());
  // Left to run, the family and its repairs find a smaller plan than the
  // first member's; told that the first member's total is a bound, they
  // stop at its plan.
  std::vector<uint64_t> offsets = start;
  EXPECT_LT(ImproveByWindowedOrders(
                records, 1, offsets,
                {.deadline = Clock::now() + std::chrono::seconds(5)})
                .total,
            TotalSize(records, *first_plan));
  offsets = start;
  const WindowedOrdersOutcome outcome = ImproveByWindowedOrders(
      records, 1, offsets, {.deadline = Clock::now() + std::chrono::seconds(5)},
      {.stop_at = TotalSize(records, *first_plan)});
  EXPECT_EQ(offsets, *first_plan);
  EXPECT_FALSE(outcome.repaired);
}

// IOPDDL S_1 (28,526 buffers, a training step): the best-fit planners stack
// long-lived activations above the short large buffers they placed first,
// 2.5% above the peak of live bytes; one windowed order stays within 0.2%.
TEST(WindowedOrdersTest, OneWindowedOrderBeatsBestFitOnIopddlS1) {
  TENSORMEM_SHARED_DATA_OR_SKIP(path, "idealloc/iopddl/S_1.csv");
  absl::StatusOr<BufferSet> set = ReadBufferSetCsv(path);
  ASSERT_TRUE(set.ok()) << set.status();
  absl::StatusOr<std::vector<UsageRecord<>>> records = ToUsageRecords(*set);
  ASSERT_TRUE(records.ok());
  const WindowedOrder order = WindowedOrderFamily(TaskSpan(*records)).front();
  std::optional<std::vector<uint64_t>> offsets = PlaceInVisitOrder(
      *records, WindowedVisitOrder(*records, order), order.first_fit, 1,
      {.deadline = Clock::now() + std::chrono::minutes(5)});
  ASSERT_TRUE(offsets.has_value());
  const uint64_t total = TotalSize(*records, *offsets);
  EXPECT_TRUE(CheckOffsets(*records, {*offsets, total}).ok());
  const uint64_t peak = PeakLiveBytes(*set);
  EXPECT_LT(total, peak + peak / 500);
  absl::StatusOr<BestFitResult> best_fit = BestFitMulti(*records, 1);
  ASSERT_TRUE(best_fit.ok());
  EXPECT_GT(best_fit->offsets.total_size, peak + peak / 50);
}

}  // namespace
}  // namespace tensormem::solver_internal
