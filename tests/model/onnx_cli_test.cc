// `tensormem plan`, `arena` and `convert` on .onnx inputs, through the built
// binary.
#include <fstream>
#include <string>

#include "cli/cli_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tensormem/plan/arena/arena_graph.h"
#include "tensormem/plan/buffer_set.h"

namespace tensormem {
namespace {

using ::tensormem::testing::CommandOutput;
using ::tensormem::testing::FreshDirectory;
using ::tensormem::testing::RunTensormem;
using ::testing::HasSubstr;

constexpr char kMobileNet[] = "data/onnx/mobilenet_v2.onnx";

nlohmann::json RunJson(const std::string& arguments) {
  const CommandOutput output = RunTensormem(arguments);
  EXPECT_EQ(output.exit_code, 0) << output.err;
  nlohmann::json json =
      nlohmann::json::parse(output.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(json.is_discarded()) << output.out;
  return json;
}

TEST(OnnxCliTest, PlanPlansTheIntermediates) {
  const nlohmann::json json =
      RunJson(std::string("plan ") + kMobileNet +
              " --fuse-activations --strategy greedy_by_size --json");
  EXPECT_EQ(json["buffers"], 65);
  EXPECT_EQ(json["model"]["intermediates"], 65);
  EXPECT_EQ(json["model"]["fused_activations"], 35);
  EXPECT_GE(json["total_size"].get<uint64_t>(),
            json["lower_bound"].get<uint64_t>());
  const CommandOutput table =
      RunTensormem(std::string("plan ") + kMobileNet + " --strategy naive");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("model: 100 nodes"));
  EXPECT_THAT(table.out, HasSubstr("100 intermediates"));
}

TEST(OnnxCliTest, ArenaPlansTheGraph) {
  const nlohmann::json json = RunJson(
      "arena data/onnx/resnet50.onnx --fuse-activations --strategy queue "
      "--json");
  EXPECT_EQ(json["model"]["intermediates"], 73);
  EXPECT_GE(json["high_water_mark"].get<uint64_t>(),
            json["lower_bound"].get<uint64_t>());
}

TEST(OnnxCliTest, ConvertWritesBufferSetsAndGraphs) {
  const std::string dir = FreshDirectory("onnx_convert");
  ASSERT_EQ(RunTensormem(std::string("convert ") + kMobileNet + " " + dir +
                         "/records.csv --fuse-activations")
                .exit_code,
            0);
  absl::StatusOr<BufferSet> set = ReadBufferSetCsv(dir + "/records.csv");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->convention, IntervalConvention::kClosed);
  EXPECT_EQ(set->buffers.size(), 65);

  const nlohmann::json json = RunJson(std::string("convert ") + kMobileNet +
                                      " " + dir + "/graph.json --json");
  EXPECT_EQ(json["to"], "graph");
  absl::StatusOr<ArenaGraph> graph = ReadArenaGraphJson(dir + "/graph.json");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->nodes.size(), 100);
  EXPECT_EQ(json["tensors"], graph->tensors.size());
}

// The written graph is the model's graph: the arena planner places both alike.
TEST(OnnxCliTest, ConvertedGraphPlansLikeTheModel) {
  const std::string dir = FreshDirectory("onnx_graph");
  const std::string graph = dir + "/inception.json";
  ASSERT_EQ(RunTensormem("convert data/onnx/inception_v3.onnx " + graph +
                         " --fuse-activations")
                .exit_code,
            0);
  for (const char* planner : {"greedy", "queue"}) {
    SCOPED_TRACE(planner);
    const nlohmann::json from_model =
        RunJson(std::string("arena data/onnx/inception_v3.onnx "
                            "--fuse-activations --json --strategy ") +
                planner);
    const nlohmann::json from_graph =
        RunJson("arena " + graph + " --json --strategy " + planner);
    EXPECT_EQ(from_model["high_water_mark"], from_graph["high_water_mark"]);
    EXPECT_EQ(from_model["offsets"], from_graph["offsets"]);
  }
}

TEST(OnnxCliTest, BadInputsAndFlags) {
  const std::string dir = FreshDirectory("onnx_bad");
  std::ifstream in(std::string(TENSORMEM_SOURCE_DIR) + "/" + kMobileNet,
                   std::ios::binary);
  std::string bytes(std::istreambuf_iterator<char>(in), {});
  std::ofstream(dir + "/cut.onnx", std::ios::binary)
      << bytes.substr(0, bytes.size() / 2);
  for (const char* command : {"plan", "arena"}) {
    const CommandOutput cut =
        RunTensormem(std::string(command) + " " + dir + "/cut.onnx");
    EXPECT_EQ(cut.exit_code, 1);
    EXPECT_THAT(cut.err, HasSubstr("cut.onnx: not an ONNX model"));
  }
  const CommandOutput shape = RunTensormem(std::string("plan ") + kMobileNet +
                                           " --input-shape input=1x3x-1");
  EXPECT_EQ(shape.exit_code, 2);
  EXPECT_THAT(shape.err, HasSubstr("--input-shape"));
  const CommandOutput wrong = RunTensormem(std::string("plan ") + kMobileNet +
                                           " --input-shape image=1x3x8x8");
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_THAT(wrong.err, HasSubstr("no graph input is named 'image'"));
  const CommandOutput not_a_model = RunTensormem(
      "convert data/models/resnet50.buffers.csv " + dir + "/graph.json");
  EXPECT_EQ(not_a_model.exit_code, 2);
}

}  // namespace
}  // namespace tensormem
