// Finding a loop in logged calls and planning one iteration (loop_plan.h).
#include "alloc/loop_plan.h"

#include <vector>

#include "gtest/gtest.h"

namespace tensormem::alloc_internal {
namespace {

// Builds a history: Alloc returns the allocation's sequence number.
class HistoryBuilder {
 public:
  uint64_t Alloc(uint64_t bytes) {
    history_.events.push_back(
        {.kind = LoopEventKind::kAlloc, .alignment = 64, .value = bytes});
    return next_++;
  }
  void Free(uint64_t sequence) {
    history_.events.push_back(
        {.kind = LoopEventKind::kFree, .value = sequence});
  }
  void Mark() { history_.events.push_back({.kind = LoopEventKind::kMark}); }
  // One iteration: a, b live together, b freed, c, then a and c freed.
  void Iteration(uint64_t scale = 1) {
    const uint64_t a = Alloc(1000 * scale);
    const uint64_t b = Alloc(2000 * scale);
    Free(b);
    const uint64_t c = Alloc(500 * scale);
    Free(a);
    Free(c);
  }
  const LoopHistory& history() const { return history_; }

 private:
  LoopHistory history_;
  uint64_t next_ = 0;
};

TEST(FindLoopTest, FindsThePeriodAfterADifferentFirstIteration) {
  HistoryBuilder log;
  const uint64_t weights = log.Alloc(1 << 20);
  log.Alloc(77);  // the first iteration makes state
  for (int i = 0; i < 3; ++i) log.Iteration();
  log.Alloc(1000);  // the next iteration has begun
  const std::optional<LoopShape> shape = FindLoop(log.history(), {});
  ASSERT_TRUE(shape.has_value());
  EXPECT_EQ(shape->period, 3u);
  EXPECT_FALSE(shape->marked);
  // An iteration begins with its 1000-byte allocation: where least is live.
  EXPECT_EQ((shape->first_sequence - (weights + 2)) % 3, 0u);
  // Rejected, the same loop is not found again.
  EXPECT_FALSE(FindLoop(log.history(), {shape->key}).has_value());
}

TEST(FindLoopTest, AStretchThatRepeatsInsideOneIterationIsNotALoop) {
  HistoryBuilder log;
  for (int i = 0; i < 40; ++i) log.Alloc(100 + i);  // no repetition
  for (int layer = 0; layer < 5; ++layer) log.Iteration();
  log.Alloc(1000);
  // 16 of 56 allocations repeat: less than half the log.
  EXPECT_FALSE(FindLoop(log.history(), {}).has_value());
}

TEST(FindLoopTest, MarksBoundIterationsThatMustMatch) {
  HistoryBuilder log;
  for (int i = 0; i < 3; ++i) {
    log.Mark();
    log.Iteration();
  }
  log.Mark();
  const std::optional<LoopShape> shape = FindLoop(log.history(), {});
  ASSERT_TRUE(shape.has_value());
  EXPECT_TRUE(shape->marked);
  EXPECT_EQ(shape->period, 3u);
  // The first of the two compared: the iteration after it is logged in full,
  // with the frees it makes of blocks the first one handed on.
  EXPECT_EQ(shape->first_sequence, 3u);

  log.Iteration(2);  // a different iteration, marked
  log.Mark();
  EXPECT_FALSE(FindLoop(log.history(), {}).has_value());
}

TEST(BuildLoopPlanTest, PlacesTheIterationAndOrdersItsFrees) {
  HistoryBuilder log;
  for (int i = 0; i < 3; ++i) log.Iteration();
  log.Alloc(1000);
  const std::optional<LoopShape> shape = FindLoop(log.history(), {});
  ASSERT_TRUE(shape.has_value());
  const absl::StatusOr<LoopPlan> plan = BuildLoopPlan(log.history(), *shape);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->requests.size(), 3u);
  for (const PlannedRequest& request : plan->requests) {
    EXPECT_TRUE(request.in_arena);
    EXPECT_FALSE(request.wraps);
    EXPECT_EQ(request.offset % 256, 0u);
  }
  // a (1000) and b (2000) live together; c (500) after b's free reuses it.
  EXPECT_EQ(plan->arena_bytes, 1024u + 2048u);
  EXPECT_EQ(plan->arena_frees, 3u);
  EXPECT_EQ(plan->requests[0].frees_before, 0u);
  EXPECT_EQ(plan->requests[2].frees_before, 1u);  // b's free came first
  EXPECT_EQ(plan->requests[1].free_rank, 0u);
}

TEST(BuildLoopPlanTest, ASearchNeverMakesTheArenaLarger) {
  HistoryBuilder log;
  for (int i = 0; i < 3; ++i) {
    // Sizes and lifetimes where placing by size alone wastes room.
    const uint64_t a = log.Alloc(3000);
    const uint64_t b = log.Alloc(1000);
    log.Free(a);
    const uint64_t c = log.Alloc(2000);
    const uint64_t d = log.Alloc(1500);
    log.Free(b);
    log.Free(d);
    const uint64_t e = log.Alloc(2500);
    log.Free(c);
    log.Free(e);
  }
  log.Alloc(3000);
  const std::optional<LoopShape> shape = FindLoop(log.history(), {});
  ASSERT_TRUE(shape.has_value());
  const absl::StatusOr<LoopPlan> fast = BuildLoopPlan(log.history(), *shape);
  const absl::StatusOr<LoopPlan> searched =
      BuildLoopPlan(log.history(), *shape, /*search_seconds=*/0.5);
  ASSERT_TRUE(fast.ok() && searched.ok());
  EXPECT_LE(searched->arena_bytes, fast->arena_bytes);
  EXPECT_GE(searched->arena_bytes, searched->peak_arena_live);
}

TEST(BuildLoopPlanTest, ABlockFreedEarlyInTheNextIterationHoldsItsPlace) {
  // Something is live at every boundary; the quietest is before the
  // scratch block, and the activation made last is freed in the next
  // iteration before the next activation is made.
  HistoryBuilder log;
  uint64_t gradient = log.Alloc(4096);
  for (int i = 0; i < 4; ++i) {
    const uint64_t activation = log.Alloc(1000);
    log.Free(gradient);
    const uint64_t scratch = log.Alloc(3000);
    log.Free(scratch);
    gradient = log.Alloc(4096);
    log.Free(activation);
  }
  log.Alloc(1000);
  log.Alloc(3000);
  const std::optional<LoopShape> shape = FindLoop(log.history(), {});
  ASSERT_TRUE(shape.has_value());
  ASSERT_EQ(shape->period, 3u);
  const absl::StatusOr<LoopPlan> plan = BuildLoopPlan(log.history(), *shape);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int wrapping = 0;
  for (const PlannedRequest& request : plan->requests) {
    EXPECT_TRUE(request.in_arena);
    wrapping += request.wraps;
  }
  EXPECT_EQ(wrapping, 1);
  EXPECT_EQ(plan->arena_frees, 2u);  // the wrapping block's free is not one
}

// Each iteration's output is freed only after the next one is made (a
// variable bound again): `output_bytes` each, beside 40,000 bytes that live
// and die inside the iteration (at most 1/8 of that may be handed on).
LoopHistory OutputsBoundAgain(uint64_t output_bytes) {
  HistoryBuilder log;
  uint64_t previous = log.Alloc(output_bytes);
  for (int i = 0; i < 4; ++i) {
    const uint64_t activation = log.Alloc(10000);
    const uint64_t scratch = log.Alloc(30000);
    log.Free(scratch);
    const uint64_t output = log.Alloc(output_bytes);
    log.Free(previous);
    previous = output;
    log.Free(activation);
  }
  log.Alloc(10000);
  return log.history();
}

TEST(BuildLoopPlanTest, AnOutputKeptUntilItsNextInstanceGetsTwoPlaces) {
  const LoopHistory history = OutputsBoundAgain(400);
  const std::optional<LoopShape> shape = FindLoop(history, {});
  ASSERT_TRUE(shape.has_value());
  ASSERT_EQ(shape->period, 3u);
  const absl::StatusOr<LoopPlan> plan = BuildLoopPlan(history, *shape);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Two iterations, every block in the arena: none left to the fallback.
  EXPECT_EQ(plan->iterations, 2u);
  ASSERT_EQ(plan->requests.size(), 6u);
  EXPECT_EQ(plan->shape.period, 6u);
  EXPECT_EQ(plan->shape.key, shape->key);
  EXPECT_EQ(plan->outliving_bytes, 0u);
  std::vector<uint64_t> output_offsets;
  int wrapping = 0;
  for (size_t j = 0; j < plan->requests.size(); ++j) {
    const PlannedRequest& request = plan->requests[j];
    EXPECT_TRUE(request.in_arena) << j;
    EXPECT_TRUE(request.request.SameRequest(plan->requests[j % 3].request));
    wrapping += request.wraps;
    if (request.request.value == 400) output_offsets.push_back(request.offset);
  }
  // The two instances alternate between two places; the second is freed in
  // the next unrolled iteration, before its next instance is made.
  ASSERT_EQ(output_offsets.size(), 2u);
  EXPECT_NE(output_offsets[0], output_offsets[1]);
  EXPECT_EQ(wrapping, 1);
  // At the peak, the scratch block beside the activation and both outputs:
  // on its own, the arena keeps the place of the output that wraps for the
  // whole unrolled iteration (placed in the pool, only while it lives).
  EXPECT_EQ(plan->peak_arena_live, 10240u + 30208u + 2 * 512u);
  EXPECT_EQ(plan->arena_bytes, plan->peak_arena_live);
}

TEST(BuildLoopPlanTest, ASmallOutputKeptUntilItsNextInstanceIsLeftOut) {
  // 4 bytes, under 1/1024 of the arena's peak: cheaper in the fallback than
  // a plan twice as long.
  const LoopHistory history = OutputsBoundAgain(4);
  const std::optional<LoopShape> shape = FindLoop(history, {});
  ASSERT_TRUE(shape.has_value());
  const absl::StatusOr<LoopPlan> plan = BuildLoopPlan(history, *shape);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->iterations, 1u);
  EXPECT_EQ(plan->requests.size(), 3u);
  EXPECT_EQ(plan->outliving_bytes, 256u);
}

TEST(BuildLoopPlanTest, AnIterationThatHandsOnMostOfItsBytesIsRefused) {
  HistoryBuilder log;
  for (int i = 0; i < 4; ++i) {
    log.Alloc(1 << 20);  // kept: a layer's activation
    const uint64_t temporary = log.Alloc(1000);
    log.Free(temporary);
  }
  log.Alloc(1 << 20);
  const std::optional<LoopShape> shape = FindLoop(log.history(), {});
  ASSERT_TRUE(shape.has_value());
  const absl::StatusOr<LoopPlan> plan = BuildLoopPlan(log.history(), *shape);
  EXPECT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("not an iteration"), std::string::npos)
      << plan.status();
}

}  // namespace
}  // namespace tensormem::alloc_internal
