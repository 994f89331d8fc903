// Hostile options through the CLI: sizes past 2^64, NaN and infinite
// fractions and time limits, zero and non-power-of-two alignments. Each is
// refused with exit 2 (bad flag) or 1 (impossible for this input) and a
// message naming the value; none crashes (a signal) or runs silently.
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;
using testing::RunTensormem;

struct HostileCase {
  std::string arguments;
  int exit_code;
  std::string message;  // a part of stderr naming the problem (the value)
};

TEST(HostileFlagsTest, EveryHostileOptionIsRefusedWithAMessage) {
  const std::string trace = "tests/cli/data/small.trace";
  const std::string set = "tests/cli/data/unplaced.csv";
  const std::string graph = "tests/data/arena/simple_graph.json";
  const std::vector<HostileCase> cases = {
      {"replay " + trace + " --memory-limit 0", 2, "'0'"},
      {"replay " + trace + " --memory-limit -1", 2, "'-1'"},
      {"replay " + trace + " --memory-limit 99999999999999999999", 2,
       "'99999999999999999999'"},
      {"replay " + trace + " --memory-limit 16E", 2, "'16E'"},
      {"replay " + trace + " --memory-limit nan", 2, "'nan'"},
      {"replay " + trace + " --fragmentation-fraction nan", 2, "'nan'"},
      {"replay " + trace + " --fragmentation-fraction -1", 2, "'-1'"},
      {"replay " + trace + " --fragmentation-fraction 2", 2, "'2'"},
      {"replay " + trace + " --fragmentation-fraction inf", 2, "'inf'"},
      {"replay " + trace + " --sub-allocator nope", 2,
       "unknown sub-allocator kind 'nope'"},
      {"replay " + trace +
           " --policy pytorch --config expandable_segments:True"
           " --sub-allocator host",
       2, "config: pytorch policy: expandable_segments:True"},
      {"plan " + set + " --align 0", 2, "--align '0'"},
      {"plan " + set + " --align 9223372036854775808", 1, "exceeds 2^63 bytes"},
      {"plan " + set + " --align 18446744073709551615", 1,
       "exceeds 2^63 bytes"},
      {"plan " + set + " -s optimal --time-limit -1s", 2, "time limit '-1s'"},
      {"plan " + set + " -s optimal --time-limit nan", 2, "time limit 'nan'"},
      {"plan " + set + " -s optimal --time-limit 1e400", 2,
       "time limit '1e400'"},
      {"plan " + set + " -s optimal --capacity -1", 2, "invalid size '-1'"},
      {"plan " + set + " --threads 0", 2, "--threads"},
      {"arena " + graph + " --tensor-alignment 0", 2, "--tensor-alignment '0'"},
      {"arena " + graph + " --tensor-alignment 3", 2, "--tensor-alignment '3'"},
      {"arena " + graph + " --arena-alignment 9223372036854775808", 1,
       "aligned to 9223372036854775808"},
  };
  for (const HostileCase& hostile : cases) {
    const testing::CommandOutput output = RunTensormem(hostile.arguments);
    EXPECT_EQ(output.exit_code, hostile.exit_code) << hostile.arguments << "\n"
                                                   << output.err;
    EXPECT_THAT(output.err, HasSubstr(hostile.message)) << hostile.arguments;
  }
  std::printf("[sweep] cli misuse cases: %zu\n", cases.size());
}

}  // namespace
}  // namespace tensormem
