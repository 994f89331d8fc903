// Hostile planning options through the library (the CLI's are in
// tests/cli/hostile_flags_test.cc): alignments 0, 3 and 2^63, and negative,
// NaN and infinite time limits, for every strategy of the registry. Each call
// is refused with an error naming the option, or returns a plan the checker
// accepts at that alignment (docs/reliability.md).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/strategy_registry.h"

namespace tensormem {
namespace {

BufferSet SmallSet() {
  BufferSet set;
  set.buffers = {{.id = 0, .lower = 0, .upper = 3, .size = 100},
                 {.id = 1, .lower = 2, .upper = 5, .size = 64},
                 {.id = 2, .lower = 4, .upper = 6, .size = 1000}};
  return set;
}

// The plan is valid, or the error names `option`.
void ExpectPlannedOrNamed(const absl::StatusOr<PlanResult>& plan,
                          const BufferSet& set, uint64_t alignment,
                          const std::string& option, const std::string& what) {
  if (!plan.ok()) {
    EXPECT_TRUE(absl::StrContains(plan.status().message(), option))
        << what << ": " << plan.status();
    EXPECT_NE(plan.status().code(), absl::StatusCode::kInternal) << what;
    return;
  }
  BufferSet placed = set;
  for (size_t i = 0; i < placed.buffers.size(); ++i)
    placed.buffers[i].offset = plan->offsets[i];
  EXPECT_TRUE(CheckPlacement(placed, alignment).ok()) << what;
}

TEST(HostilePlanOptionsTest, EveryStrategyRefusesOrPlansValidly) {
  const BufferSet set = SmallSet();
  int cases = 0;
  for (PlanMode mode : {PlanMode::kOffsets, PlanMode::kObjects}) {
    for (const StrategyInfo* strategy : ListStrategies(mode)) {
      for (uint64_t alignment : {uint64_t{0}, uint64_t{3}, uint64_t{1} << 63}) {
        PlanOptions options;
        options.alignment = alignment;
        ExpectPlannedOrNamed(
            RunStrategy(strategy->name, set, mode, options), set, alignment,
            "alignment",
            strategy->name + " alignment " + std::to_string(alignment));
        ++cases;
      }
    }
  }
  std::printf("[sweep] planner option misuse cases: %d\n", cases);
}

TEST(HostilePlanOptionsTest, SearchesRefuseBadTimeLimitsByName) {
  const BufferSet set = SmallSet();
  for (double limit : {-1.0, std::numeric_limits<double>::quiet_NaN(),
                       std::numeric_limits<double>::infinity()}) {
    PlanOptions options;
    options.time_limit_seconds = limit;
    const absl::StatusOr<PlanResult> plan =
        RunStrategy("optimal", set, PlanMode::kOffsets, options);
    ASSERT_FALSE(plan.ok()) << limit;
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(plan.status().message(), "time limit"))
        << plan.status();
    // Heuristics ignore time limits: they still plan.
    for (const StrategyInfo* strategy : ListStrategies(PlanMode::kOffsets)) {
      if (strategy->name == "optimal") continue;
      ExpectPlannedOrNamed(
          RunStrategy(strategy->name, set, PlanMode::kOffsets, options), set, 1,
          "time limit", strategy->name);
    }
  }
}

}  // namespace
}  // namespace tensormem
