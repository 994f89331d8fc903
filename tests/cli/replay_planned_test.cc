// `tensormem replay` under the planned policy: the steady state from the
// take-over, and what became of the plans found, in text and in JSON; and
// the same steady state in `tensormem bench`'s table.
#include <filesystem>
#include <string>

#include "cli/cli_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tensormem::testing {
namespace {

using ::testing::HasSubstr;

// The quickest loop of the corpus to place (a few milliseconds).
constexpr char kLoop[] =
    "replay data/models/loops/resnet18.infer_b8_s10.trace.gz "
    "--policy planned --config planning:inline";

TEST(ReplayPlannedTest, SaysWhatBecameOfThePlans) {
  const CommandOutput text = RunTensormem(kLoop);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("steady pool / live"));
  EXPECT_THAT(text.out,
              HasSubstr("loop plans             1 found: 1 took over, 0 "
                        "without room, 0 not repeated, 0 waiting"));

  const CommandOutput run = RunTensormem(std::string(kLoop) + " --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json json = nlohmann::json::parse(run.out);
  const nlohmann::json& plans = json["stats"]["loop_plans"];
  EXPECT_EQ(plans["found"], 1);
  EXPECT_EQ(plans["taken_over"], 1);
  EXPECT_EQ(plans["without_room"], 0);
  EXPECT_EQ(plans["not_repeated"], 0);
  EXPECT_EQ(plans["waiting"], 0);
  EXPECT_GE(json["planned_iterations"].get<int>(), 1);
  EXPECT_GE(json["steady_ratio"].get<double>(), 1.0);
}

TEST(ReplayPlannedTest, OtherPoliciesPrintNoLoopPlans) {
  const CommandOutput text = RunTensormem(
      "replay data/models/loops/transformer.train_b8_s10.trace.gz "
      "--policy tight");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, ::testing::Not(HasSubstr("loop plans")));
  const CommandOutput run = RunTensormem(
      "replay data/models/loops/transformer.train_b8_s10.trace.gz "
      "--policy tight --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_FALSE(nlohmann::json::parse(run.out)["stats"].contains("loop_plans"));
}

// The main bench (`make run`) shows each trace's steady state under planned,
// planning inline, as replay prints it, or why no plan served.
TEST(BenchPlannedTest, EachTraceGetsPlannedsSteadyStateOrWhyNot) {
  const std::string corpus = FreshDirectory("bench_planned");
  for (const char* trace : {"data/models/loops/resnet18.infer_b8_s10.trace.gz",
                            "tests/cli/data/small.trace"}) {
    std::filesystem::copy_file(
        std::string(TENSORMEM_SOURCE_DIR) + "/" + trace,
        corpus + "/" + std::filesystem::path(trace).filename().string());
  }
  const CommandOutput run = RunTensormem("bench --corpus " + corpus +
                                         " --out " + corpus + "/out --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json json = nlohmann::json::parse(run.out);
  ASSERT_EQ(json["workloads"].size(), 2u);
  const nlohmann::json& loop = json["workloads"][0];  // resnet18... sorts first
  const nlohmann::json& small = json["workloads"][1];
  ASSERT_EQ(loop["workload"], "resnet18.infer_b8_s10");
  const CommandOutput replay = RunTensormem(
      "replay data/models/loops/resnet18.infer_b8_s10.trace.gz "
      "--policy planned --config planning:inline --json");
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_DOUBLE_EQ(
      loop["planned_steady_over_live"].get<double>(),
      nlohmann::json::parse(replay.out)["steady_ratio"].get<double>());
  EXPECT_EQ(loop["planned_no_steady_state"], "");
  EXPECT_TRUE(small["planned_steady_over_live"].is_null());
  EXPECT_EQ(small["planned_no_steady_state"], "no loop found");
  EXPECT_THAT(json["summary"].dump(),
              HasSubstr("planned served 1 of 2 traces from a plan"));
}

}  // namespace
}  // namespace tensormem::testing
