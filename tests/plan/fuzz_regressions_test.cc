// Regressions found by the fuzzers (fuzz/regressions/, docs/reliability.md),
// each named after what it found.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/plan/arena/arena_graph.h"
#include "tensormem/plan/buffer_set.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

// fuzz/regressions/buffer_set_csv/stray_lower_in_closed_header: a closed
// header that also had `lower` was taken as half-open and its missing
// `upper` column read at index -1.
TEST(FuzzRegressionTest, StrayLowerInClosedHeaderReadsAsClosed) {
  absl::StatusOr<BufferSet> set = ParseBufferSetCsv(
      "id,lower,first_task,last_task,size\n0,7,0,1,64\n", "stray.csv");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->convention, IntervalConvention::kClosed);
  EXPECT_EQ(set->buffers[0].lower, 0);
  EXPECT_EQ(set->buffers[0].upper, 2);
}

// fuzz/regressions/arena_graph_json/number_out_of_double_range: a number
// such as 1e3089 threw out_of_range through the reader (std::terminate).
TEST(FuzzRegressionTest, JsonNumberOutOfDoubleRangeIsAnError) {
  absl::StatusOr<ArenaGraph> graph = ParseArenaGraphJson(
      R"({"tensors": [{"size": 1e3089}], "nodes": []})", "big.json");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("big.json: not valid JSON"));
}

}  // namespace
}  // namespace tensormem
