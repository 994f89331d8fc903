#include "tensormem/plan/strategy_registry.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plan/tflite_fixtures.h"
#include "tensormem/plan/checker.h"

namespace tensormem {
namespace {

using ::tensormem::testing::ComplexRecords;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

BufferSet ComplexSet() { return *FromUsageRecords(ComplexRecords()); }

TEST(StrategyRegistryTest, ListsTheBuiltinsInBothModes) {
  std::vector<std::string> offsets, objects;
  for (const StrategyInfo* s : ListStrategies(PlanMode::kOffsets))
    offsets.push_back(s->name);
  for (const StrategyInfo* s : ListStrategies(PlanMode::kObjects))
    objects.push_back(s->name);
  for (const char* name :
       {"naive", "equality", "greedy_in_order", "greedy_by_breadth",
        "greedy_by_size", "greedy_best", "min_cost_flow"}) {
    EXPECT_THAT(objects, ::testing::Contains(name));
    EXPECT_THAT(offsets, ::testing::Contains(name));
  }
  EXPECT_THAT(offsets, ::testing::Contains("best_fit_multi"));
  EXPECT_THAT(objects, ::testing::Not(::testing::Contains("best_fit_multi")));
}

TEST(StrategyRegistryTest, RunsEveryStrategyWithBoundsAndValidPlans) {
  const BufferSet set = ComplexSet();
  for (PlanMode mode : {PlanMode::kOffsets, PlanMode::kObjects}) {
    for (const StrategyInfo* strategy : ListStrategies(mode)) {
      if (!strategy->in_all) continue;
      absl::StatusOr<PlanResult> plan =
          RunStrategy(strategy->name, set, mode, {.alignment = 8});
      ASSERT_TRUE(plan.ok()) << strategy->name << ": " << plan.status();
      EXPECT_EQ(plan->lower_bound, mode == PlanMode::kOffsets ? 96u : 112u);
      EXPECT_GE(plan->total_size, plan->lower_bound) << strategy->name;
      EXPECT_GE(plan->Ratio(), 1.0);
      BufferSet placed = set;
      for (size_t i = 0; i < placed.buffers.size(); ++i)
        placed.buffers[i].offset = plan->offsets[i];
      EXPECT_TRUE(CheckPlacement(placed, 8).ok()) << strategy->name;
    }
  }
}

TEST(StrategyRegistryTest, ReportsTfliteResultsThroughTheRegistry) {
  absl::StatusOr<PlanResult> by_size =
      RunStrategy("greedy_by_size", ComplexSet(), PlanMode::kObjects);
  ASSERT_TRUE(by_size.ok());
  EXPECT_THAT(by_size->objects.object_ids,
              ElementsAre(1, 0, 2, 1, 3, 0, 1, 2, 0));
  EXPECT_EQ(by_size->total_size, 112u);
  EXPECT_DOUBLE_EQ(by_size->Ratio(), 1.0);

  absl::StatusOr<PlanResult> offsets =
      RunStrategy("greedy_by_size", ComplexSet(), PlanMode::kOffsets);
  ASSERT_TRUE(offsets.ok());
  EXPECT_THAT(offsets->offsets, ElementsAre(0, 32, 80, 64, 88, 0, 64, 72, 0));
  EXPECT_EQ(offsets->total_size, 96u);

  absl::StatusOr<PlanResult> best_fit =
      RunStrategy("best_fit_multi", ComplexSet(), PlanMode::kOffsets);
  ASSERT_TRUE(best_fit.ok());
  EXPECT_TRUE(best_fit->extra.count("variant"));
}

TEST(StrategyRegistryTest, SortsRecordsForStrategiesThatAssumeExecutionOrder) {
  // Rows out of time order: GREEDY_IN_ORDER on the raw order would put
  // buffers 1 and 3 in one object although they overlap at time 0.
  BufferSet set = *ParseBufferSetCsv(
      "id,lower,upper,size\n0,0,1,8\n1,2,3,8\n2,0,1,8\n3,0,3,8\n");
  for (const char* name : {"equality", "greedy_in_order", "min_cost_flow"}) {
    absl::StatusOr<PlanResult> plan =
        RunStrategy(name, set, PlanMode::kObjects);
    ASSERT_TRUE(plan.ok()) << name << ": " << plan.status();
    EXPECT_EQ(plan->total_size, 24u) << name;  // 3 live at time 0
  }
}

TEST(StrategyRegistryTest, ExplainsRefusals) {
  EXPECT_EQ(
      RunStrategy("no_such", ComplexSet(), PlanMode::kOffsets).status().code(),
      absl::StatusCode::kNotFound);
  absl::Status objects_only =
      RunStrategy("best_fit_multi", ComplexSet(), PlanMode::kObjects).status();
  EXPECT_THAT(objects_only.message(), HasSubstr("offsets only"));
  EXPECT_FALSE(
      RunStrategy("naive", ComplexSet(), PlanMode::kOffsets, {.alignment = 0})
          .ok());

  BufferSet huge = ComplexSet();
  huge.buffers[0].size = uint64_t{1} << 63;
  EXPECT_THAT(RunStrategy("naive", huge, PlanMode::kOffsets).status().message(),
              HasSubstr("exceeds 2^63"));
}

TEST(StrategyRegistryTest, RefusesQuadraticStrategiesThatWouldTakeMinutes) {
  // 4,000 buffers in a chain: min_cost_flow has ~8M reuse edges and would run
  // for many minutes.
  BufferSet set;
  for (int i = 0; i < 4000; ++i) {
    set.buffers.push_back({.id = static_cast<uint64_t>(i),
                           .lower = i,
                           .upper = i + 2,
                           .size = 64,
                           .offset = {}});
  }
  absl::StatusOr<std::vector<UsageRecord<>>> records = ToUsageRecords(set);
  ASSERT_TRUE(records.ok());
  const StrategyInfo* flow = FindStrategy("min_cost_flow");
  ASSERT_NE(flow, nullptr);
  EXPECT_THAT(
      SlownessReason(*flow, MeasureProblem(*records, PlanMode::kObjects)),
      HasSubstr("min_cost_flow would take about"));
  const absl::Status refused =
      RunStrategy("min_cost_flow", set, PlanMode::kObjects).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("--force"));
  // The fast strategies are never refused.
  EXPECT_EQ(SlownessReason(*FindStrategy("best_fit_multi"),
                           MeasureProblem(*records, PlanMode::kOffsets)),
            "");
}

TEST(StrategyRegistryTest, RegisteredStrategiesJoinTheRegistry) {
  StrategyInfo info;
  info.name = "test_stacked";
  info.description = "every buffer on top of the previous one";
  info.offsets = [](const PlanInput& input,
                    const PlanOptions&) -> absl::StatusOr<OffsetsPlan> {
    OffsetsPlan plan;
    for (const UsageRecord<>& r : input.records) {
      plan.offsets.offsets.push_back(plan.offsets.total_size);
      plan.offsets.total_size += r.tensor_size;
    }
    plan.extra["proven_optimal"] = false;
    return plan;
  };
  info.in_all = false;
  ASSERT_TRUE(RegisterStrategy(info));
  absl::StatusOr<PlanResult> plan =
      RunStrategy("test_stacked", ComplexSet(), PlanMode::kOffsets);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->total_size, 192u);
  EXPECT_EQ(plan->extra.at("proven_optimal"), false);

  // A strategy returning an invalid plan is caught by the checker.
  info.name = "test_broken";
  info.offsets = [](const PlanInput& input,
                    const PlanOptions&) -> absl::StatusOr<OffsetsPlan> {
    OffsetsPlan plan;
    plan.offsets.offsets.assign(input.records.size(), 0);
    plan.offsets.total_size = 64;
    return plan;
  };
  const StrategyInfo* naive = FindStrategy("naive");
  ASSERT_TRUE(RegisterStrategy(info));
  EXPECT_FALSE(RegisterStrategy(info)) << "a name is registered once";
  EXPECT_EQ(FindStrategy("naive"), naive) << "entries never move";
  const absl::Status broken =
      RunStrategy("test_broken", ComplexSet(), PlanMode::kOffsets).status();
  EXPECT_EQ(broken.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(broken.message(), HasSubstr("invalid plan"));
}

}  // namespace
}  // namespace tensormem
