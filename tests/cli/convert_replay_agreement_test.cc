// `tensormem convert` and `tensormem replay` count a workload with the same
// definitions (trace_summary.h): on the same input they report the same
// events, allocations, frees, failures and peak of live bytes.
#include <string>

#include "cli/cli_runner.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tensormem::testing {
namespace {

nlohmann::json RunJson(const std::string& arguments) {
  const CommandOutput run = RunTensormem(arguments);
  EXPECT_EQ(run.exit_code, 0) << arguments << "\n" << run.err;
  return run.exit_code == 0 ? nlohmann::json::parse(run.out)
                            : nlohmann::json::object();
}

class ConvertReplayAgreementTest
    : public ::testing::TestWithParam<const char*> {};

TEST_P(ConvertReplayAgreementTest, SameCountsAndPeakLiveBytes) {
  const std::string input = GetParam();
  const std::string output = FreshDirectory("agreement") + "/out.trace";
  const nlohmann::json converted =
      RunJson("convert " + input + " " + output + " --json");
  const nlohmann::json replayed = RunJson("replay " + input + " --json");
  ASSERT_TRUE(converted.contains("peak_live_bytes")) << converted.dump();
  EXPECT_GT(converted["peak_live_bytes"].get<uint64_t>(), 0u);
  for (const char* key :
       {"events", "allocs", "frees", "failed_allocs", "peak_live_bytes"}) {
    EXPECT_EQ(converted[key], replayed[key]) << input << ": " << key;
  }
  // The converted trace replays to the same peak.
  EXPECT_EQ(RunJson("replay " + output + " --json")["peak_live_bytes"],
            converted["peak_live_bytes"]);
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, ConvertReplayAgreementTest,
    ::testing::Values(
        // A snapshot with a recorded failed allocation and blocks live at
        // its start; an RMM log; a buffer set; a real model's trace.
        "tests/data/trace/snapshot_protocol2.pickle",
        "tests/data/trace/rmm_log.csv", "data/models/resnet18.buffers.csv",
        "data/models/mobilenet_v2.infer_b1.trace.gz"));

}  // namespace
}  // namespace tensormem::testing
