// The arena graph JSON reader: the sample graphs, and errors that name the
// file and the JSON location.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plan/arena_test_util.h"
#include "tensormem/plan/arena/arena_graph.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

std::string DataPath(const std::string& name) {
  return std::string(TENSORMEM_TEST_DATA) + "/arena/" + name;
}

TEST(ArenaGraphJsonTest, ReadsTheSimpleGraph) {
  absl::StatusOr<ArenaGraph> graph =
      ReadArenaGraphJson(DataPath("simple_graph.json"));
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->tensors.size(), 6);
  EXPECT_EQ(graph->tensors[5].bytes, 18);
  EXPECT_EQ(graph->inputs, (std::vector<int>{0, 1}));
  EXPECT_EQ(graph->outputs, (std::vector<int>{3}));
  ASSERT_EQ(graph->nodes.size(), 3);
  EXPECT_EQ(graph->nodes[1].outputs, (std::vector<int>{4, 5}));
  EXPECT_EQ(graph->nodes[1].inplace.inputs, (std::vector<int>{0}));
  // Same graph as the TFLite fixture: same greedy offsets.
  auto planner = testing_arena::PlanAll(
      &*graph, testing_arena::TestOptions(ArenaPlannerKind::kGreedy));
  EXPECT_EQ(testing_arena::Offset(*planner, 3), 48);
  EXPECT_EQ(planner->high_water_mark(), 60);
}

TEST(ArenaGraphJsonTest, ReadsTypesUnitsTemporariesAndInplace) {
  absl::StatusOr<ArenaGraph> graph =
      ReadArenaGraphJson(DataPath("persistent_temporary.json"));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->tensors[1].type, AllocationType::kArenaRwPersistent);
  EXPECT_EQ(graph->tensors[6].type, AllocationType::kMmapRo);
  EXPECT_EQ(graph->tensors[6].bytes, 1024);
  EXPECT_EQ(graph->tensors[7].type, AllocationType::kDynamic);
  EXPECT_EQ(graph->inputs, (std::vector<int>{0, -1, 1}));
  EXPECT_EQ(graph->variables, (std::vector<int>{1}));
  EXPECT_EQ(graph->nodes[1].temporaries, (std::vector<int>{5}));
  auto planner = testing_arena::PlanAll(
      &*graph, testing_arena::TestOptions(ArenaPlannerKind::kGreedy));
  EXPECT_EQ(graph->tensors[6].data, nullptr);
  EXPECT_EQ(graph->tensors[7].data, nullptr);
  EXPECT_EQ(planner->high_water_mark(), 49);  // as §8.3's persistent test
  testing_arena::ExpectValidPlan(*planner);

  absl::StatusOr<ArenaGraph> reshape =
      ReadArenaGraphJson(DataPath("inplace_reshape.json"));
  ASSERT_TRUE(reshape.ok()) << reshape.status();
  EXPECT_TRUE(reshape->nodes[2].inplace.data_unmodified);
}

TEST(ArenaGraphJsonTest, ErrorsNameTheFileAndTheLocation) {
  struct Case {
    const char* file;
    const char* message;
  } cases[] = {
      {"bad_syntax.json", "bad_syntax.json: not valid JSON"},
      {"bad_optional_output.json",
       "bad_optional_output.json: outputs[1] = -1: an optional tensor (-1) is "
       "not allowed here"},
      {"bad_unknown_tensor.json",
       "bad_unknown_tensor.json: nodes[1].inputs[1] = 7: no such tensor (the "
       "graph has 2)"},
      {"bad_type.json", "bad_type.json: /tensors/1/type: expected one of"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ArenaGraph> graph = ReadArenaGraphJson(DataPath(c.file));
    ASSERT_FALSE(graph.ok()) << c.file;
    EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(graph.status().message(), HasSubstr(c.message));
  }
  EXPECT_THAT(ParseArenaGraphJson("{\"tensors\": [{\"size\": -4}]}", "inline")
                  .status()
                  .message(),
              HasSubstr("inline: /tensors/0/size: expected a byte count"));
  EXPECT_THAT(
      ParseArenaGraphJson(
          "{\"tensors\": [], \"nodes\": [{\"inputs\": [\"a\"]}]}", "inline")
          .status()
          .message(),
      HasSubstr("inline: /nodes/0/inputs/0: expected a tensor index"));
  EXPECT_THAT(ParseArenaGraphJson("[]", "inline").status().message(),
              HasSubstr("expected an object"));
  EXPECT_EQ(ReadArenaGraphJson(DataPath("missing.json")).status().code(),
            absl::StatusCode::kNotFound);
}

// Every field the reader knows survives a write and a read.
TEST(ArenaGraphJsonTest, FormatThenParseGivesTheSameGraph) {
  for (const char* name : {"simple_graph.json", "persistent_temporary.json",
                           "inplace_reshape.json"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<ArenaGraph> graph = ReadArenaGraphJson(DataPath(name));
    ASSERT_TRUE(graph.ok()) << graph.status();
    const std::string text = FormatArenaGraphJson(*graph);
    absl::StatusOr<ArenaGraph> again = ParseArenaGraphJson(text, "written");
    ASSERT_TRUE(again.ok()) << again.status() << "\n" << text;
    ASSERT_EQ(again->tensors.size(), graph->tensors.size());
    for (size_t t = 0; t < graph->tensors.size(); ++t) {
      EXPECT_EQ(again->tensors[t].bytes, graph->tensors[t].bytes);
      EXPECT_EQ(again->tensors[t].type, graph->tensors[t].type);
    }
    EXPECT_EQ(again->inputs, graph->inputs);
    EXPECT_EQ(again->outputs, graph->outputs);
    EXPECT_EQ(again->variables, graph->variables);
    ASSERT_EQ(again->nodes.size(), graph->nodes.size());
    for (size_t n = 0; n < graph->nodes.size(); ++n) {
      EXPECT_EQ(again->nodes[n].inputs, graph->nodes[n].inputs);
      EXPECT_EQ(again->nodes[n].outputs, graph->nodes[n].outputs);
      EXPECT_EQ(again->nodes[n].temporaries, graph->nodes[n].temporaries);
      EXPECT_EQ(again->nodes[n].inplace.inputs, graph->nodes[n].inplace.inputs);
      EXPECT_EQ(again->nodes[n].inplace.data_unmodified,
                graph->nodes[n].inplace.data_unmodified);
    }
  }
}

}  // namespace
}  // namespace tensormem
