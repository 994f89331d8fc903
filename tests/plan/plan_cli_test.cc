// End-to-end tests of `tensormem plan`, running the built binary.
#include <random>
#include <string>

#include "absl/strings/str_format.h"
#include "cli/cli_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tensormem/core/file_io.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"

namespace tensormem {
namespace {

using ::tensormem::testing::FreshDirectory;
using ::tensormem::testing::ReadFileOrEmpty;
using ::tensormem::testing::RunTensormem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kComplex[] = "tests/plan/data/complex_records.csv";

nlohmann::json Json(const std::string& text) {
  nlohmann::json json =
      nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(json.is_discarded()) << text;
  return json;
}

TEST(PlanCliTest, OffsetsAsJson) {
  auto result = RunTensormem(std::string("plan ") + kComplex +
                             " --strategy greedy_by_size --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = Json(result.out);
  EXPECT_EQ(json["strategy"], "greedy_by_size");
  EXPECT_EQ(json["total_size"], 96);
  EXPECT_EQ(json["lower_bound"], 96);
  EXPECT_THAT(json["offsets"].get<std::vector<uint64_t>>(),
              ElementsAre(0, 32, 80, 64, 88, 0, 64, 72, 0));
  EXPECT_TRUE(json.contains("seconds"));
}

TEST(PlanCliTest, ObjectsAsJson) {
  auto result = RunTensormem(std::string("plan ") + kComplex +
                             " -s greedy_by_size --objects --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = Json(result.out);
  EXPECT_EQ(json["total_size"], 112);
  EXPECT_EQ(json["lower_bound"], 112);
  EXPECT_THAT(json["objects"]["ids"].get<std::vector<size_t>>(),
              ElementsAre(1, 0, 2, 1, 3, 0, 1, 2, 0));
  EXPECT_THAT(json["objects"]["sizes"].get<std::vector<uint64_t>>(),
              ElementsAre(64, 32, 8, 8));
}

TEST(PlanCliTest, AllStrategiesTable) {
  auto table =
      RunTensormem(std::string("plan ") + kComplex + " --strategy all");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("lower bound"));
  EXPECT_THAT(table.out, HasSubstr("best_fit_multi"));
  EXPECT_THAT(table.out, HasSubstr("min_cost_flow"));

  auto json = RunTensormem(std::string("plan ") + kComplex +
                           " --strategy all --objects --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json all = Json(json.out);
  EXPECT_EQ(all["mode"], "objects");
  EXPECT_EQ(all["lower_bound"], 112);
  std::vector<std::string> names;
  for (const nlohmann::json& row : all["strategies"])
    names.push_back(row["strategy"]);
  EXPECT_THAT(names,
              ::testing::IsSupersetOf({"naive", "equality", "greedy_in_order",
                                       "greedy_by_breadth", "greedy_by_size",
                                       "greedy_best", "min_cost_flow"}));
  EXPECT_EQ(all["best"],
            "greedy_by_size");  // 112 = the bound; the first to reach it
}

TEST(PlanCliTest, WritesCsvThatChecksAndHtml) {
  const std::string dir = FreshDirectory("plan_cli");
  auto result =
      RunTensormem(std::string("plan ") + kComplex + " --align 16 --out " +
                   dir + "/plan.csv --html " + dir + "/plan.html");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  absl::StatusOr<BufferSet> placed = ReadBufferSetCsv(dir + "/plan.csv");
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_EQ(placed->convention,
            IntervalConvention::kClosed);  // written back as read
  EXPECT_TRUE(CheckPlacement(*placed, 16).ok());
  EXPECT_THAT(ReadFileOrEmpty(dir + "/plan.html"), HasSubstr("<html"));

  auto check =
      RunTensormem("plan " + dir + "/plan.csv --check --align 16 --json");
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(Json(check.out)["valid"], true);

  // Break the plan: put every buffer at offset 0.
  BufferSet broken = *placed;
  for (Buffer& b : broken.buffers) b.offset = 0;
  {
    FILE* file = std::fopen((dir + "/broken.csv").c_str(), "w");
    const std::string csv = FormatBufferSetCsv(broken);
    std::fwrite(csv.data(), 1, csv.size(), file);
    std::fclose(file);
  }
  auto invalid = RunTensormem("plan " + dir + "/broken.csv --check");
  EXPECT_EQ(invalid.exit_code, 1);
  EXPECT_THAT(invalid.err, HasSubstr("overlaps"));

  auto objects = RunTensormem(std::string("plan ") + kComplex +
                              " --objects --out " + dir + "/objects.csv");
  ASSERT_EQ(objects.exit_code, 0) << objects.err;
  EXPECT_THAT(ReadFileOrEmpty(dir + "/objects.csv"),
              HasSubstr("id,first_task,last_task,size,object\n"));
}

// --counted-time: a search cut short by its limit gives the same plan, and
// stops after the same work, on every run.
TEST(PlanCliTest, CountedTimeGivesTheSamePlanEveryRun) {
  const std::string dir = FreshDirectory("plan_counted_time");
  std::mt19937 random(1);
  std::string csv = "id,lower,upper,size\n";
  for (int i = 0; i < 300; ++i) {
    const int lower = static_cast<int>(random() % 200);
    const int upper = lower + 1 + static_cast<int>(random() % 66);
    absl::StrAppendFormat(&csv, "%d,%d,%d,%d\n", i, lower, upper,
                          1 + random() % 5000);
  }
  ASSERT_TRUE(WriteTextFile(dir + "/set.csv", csv).ok());
  const std::string command = "plan " + dir +
                              "/set.csv --strategy optimal --align 16 "
                              "--time-limit 4ms --counted-time --json";
  const auto first = RunTensormem(command);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const nlohmann::json plan = Json(first.out);
  EXPECT_FALSE(plan["proven_optimal"].get<bool>());
  EXPECT_GT(plan["nodes"].get<uint64_t>(), 0u);
  for (int run = 0; run < 2; ++run) {
    const auto again = RunTensormem(command);
    ASSERT_EQ(again.exit_code, 0) << again.err;
    const nlohmann::json same = Json(again.out);
    EXPECT_EQ(same["offsets"], plan["offsets"]);
    EXPECT_EQ(same["nodes"], plan["nodes"]);
    EXPECT_EQ(same["seconds_to_best"], plan["seconds_to_best"]);
  }
}

TEST(PlanCliTest, ClearErrors) {
  auto unknown =
      RunTensormem(std::string("plan ") + kComplex + " --strategy nope");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("unknown strategy 'nope'"));
  EXPECT_THAT(unknown.err, HasSubstr("best_fit_multi"));

  auto missing = RunTensormem("plan /nonexistent/set.csv");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent/set.csv"));

  auto offsets_only = RunTensormem(std::string("plan ") + kComplex +
                                   " -s best_fit_multi --objects");
  EXPECT_EQ(offsets_only.exit_code, 2);
  EXPECT_THAT(offsets_only.err, HasSubstr("offsets only"));

  auto bad_align = RunTensormem(std::string("plan ") + kComplex + " --align 0");
  EXPECT_EQ(bad_align.exit_code, 2);

  auto help = RunTensormem("plan --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("Examples"));
}

}  // namespace
}  // namespace tensormem
