// End-to-end: `tensormem arena` through the built binary.
#include <string>

#include "cli/cli_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "shared_data.h"

namespace tensormem::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kData[] = "tests/data/arena/";

nlohmann::json RunJson(const std::string& arguments) {
  const CommandOutput output = RunTensormem("arena " + arguments + " --json");
  EXPECT_EQ(output.exit_code, 0) << arguments << "\n" << output.err;
  return nlohmann::json::parse(output.out, nullptr, /*allow_exceptions=*/false);
}

TEST(ArenaCliTest, GreedyJsonHasTheTfliteOffsets) {
  const nlohmann::json json =
      RunJson(std::string(kData) + "simple_graph.json --tensor-alignment 4");
  ASSERT_TRUE(json.is_object());
  EXPECT_EQ(json["planner"], "greedy");
  const std::vector<int> expected = {0, 4, 48, 48, 32, 12};
  ASSERT_EQ(json["offsets"].size(), expected.size());
  for (size_t t = 0; t < expected.size(); ++t) {
    EXPECT_EQ(json["offsets"][t]["arena"], "main");
    EXPECT_EQ(json["offsets"][t]["offset"], expected[t]) << t;
  }
  EXPECT_EQ(json["high_water_mark"], 60);
  EXPECT_EQ(json["buffer_bytes"], 60);
  EXPECT_EQ(json["persistent_high_water_mark"], 0);
}

TEST(ArenaCliTest, QueuePlannerAddsTwoArenaAlignmentsToTheBuffer) {
  const nlohmann::json json = RunJson(std::string(kData) +
                                      "simple_graph.json --strategy queue "
                                      "--tensor-alignment 4");
  EXPECT_EQ(json["high_water_mark"], 58);
  EXPECT_EQ(json["buffer_bytes"], 58 + 128);
  EXPECT_EQ(json["offsets"][3]["offset"], 0);
}

TEST(ArenaCliTest, PersistentNullAndSharedTensors) {
  const nlohmann::json json = RunJson(std::string(kData) +
                                      "persistent_temporary.json "
                                      "--tensor-alignment 4");
  EXPECT_EQ(json["offsets"][1]["arena"], "persistent");
  EXPECT_TRUE(json["offsets"][6].is_null());  // mmap_ro
  EXPECT_TRUE(json["offsets"][7].is_null());  // dynamic
  EXPECT_EQ(json["persistent_high_water_mark"], 6);
  const nlohmann::json reshape =
      RunJson(std::string(kData) + "inplace_reshape.json --tensor-alignment 4");
  EXPECT_EQ(reshape["offsets"][4]["shares_with"], 2);
  EXPECT_EQ(reshape["high_water_mark"], 54);
}

TEST(ArenaCliTest, TableAndHtml) {
  const std::string dir = FreshDirectory("arena_html");
  const CommandOutput output =
      RunTensormem("arena data/graphs/mobilenet_v2_blocks.json --html " + dir +
                   "/plan.html");
  ASSERT_EQ(output.exit_code, 0) << output.err;
  EXPECT_THAT(output.out, HasSubstr("main arena:"));
  EXPECT_THAT(output.out, HasSubstr("mmap_ro"));
  EXPECT_THAT(output.out, HasSubstr("(shares tensor"));
  EXPECT_THAT(ReadFileOrEmpty(dir + "/plan.html"), HasSubstr("<html"));
}

TEST(ArenaCliTest, BufferSetInputIsPlannedAsAGraph) {
  TENSORMEM_SHARED_DATA_OR_SKIP(set, "idealloc/iree/iree_mobilenet.csv");
  const nlohmann::json json = RunJson(set + " --tensor-alignment 1");
  EXPECT_EQ(json["high_water_mark"], 5706112);
  EXPECT_EQ(json["lower_bound"], 5706112);
}

TEST(ArenaCliTest, ErrorsGoToStderrWithExitCodes) {
  struct Case {
    std::string arguments;
    int exit_code;
    const char* message;
  } cases[] = {
      {std::string(kData) + "bad_unknown_tensor.json", 1,
       "nodes[1].inputs[1] = 7: no such tensor"},
      {std::string(kData) + "bad_syntax.json", 1, "not valid JSON"},
      {std::string(kData) + "simple_graph.json --strategy best", 2,
       "--strategy 'best'"},
      {std::string(kData) + "simple_graph.json --tensor-alignment 3", 2,
       "must be a power of two"},
      {std::string(kData) + "simple_graph.json --tensor-alignment 128", 2,
       "no larger"},
      {std::string(kData) + "simple_graph.json --planner queue "
                            "--preserve-all-tensors",
       2, "belongs to the greedy planner"},
  };
  for (const Case& c : cases) {
    const CommandOutput output = RunTensormem("arena " + c.arguments);
    EXPECT_EQ(output.exit_code, c.exit_code) << c.arguments;
    EXPECT_THAT(output.err, HasSubstr(c.message)) << c.arguments;
    EXPECT_TRUE(output.out.empty()) << c.arguments;
  }
}

}  // namespace
}  // namespace tensormem::testing
