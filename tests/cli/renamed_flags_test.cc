// Flags renamed so that one name means one thing across subcommands
// (docs/design.md, CLI surface): the new name works, the former one still
// does the same for one version, and --help shows only the new one.
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tensormem {
namespace {

using testing::FreshDirectory;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFileOrEmpty;
using testing::RunTensormem;

struct Rename {
  std::string command;
  std::string former;
  std::string now;
};

const std::vector<Rename>& Renames() {
  static const auto* renames = new std::vector<Rename>{
      {"arena", "--planner", "--strategy"},
      {"bench", "--strategies", "--strategy"},
      {"replay", "--offsets", "--list-blocks"},
      {"whatif", "--device", "--snapshot-device"},
      {"convert", "--device", "--snapshot-device"},
  };
  return *renames;
}

TEST(RenamedFlagsTest, HelpShowsOnlyTheNewName) {
  for (const Rename& rename : Renames()) {
    SCOPED_TRACE(rename.command + " " + rename.former);
    const testing::CommandOutput help =
        RunTensormem(rename.command + " --help");
    ASSERT_EQ(help.exit_code, 0) << help.err;
    EXPECT_THAT(help.out, HasSubstr(rename.now + " "));
    EXPECT_THAT(help.out, Not(HasSubstr(rename.former + " ")));
  }
}

TEST(RenamedFlagsTest, ArenaStrategyAndPlannerPlanAlike) {
  const std::string graph =
      "arena data/graphs/mobilenet_v2_blocks.json --json ";
  const testing::CommandOutput now = RunTensormem(graph + "--strategy queue");
  const testing::CommandOutput former = RunTensormem(graph + "--planner queue");
  ASSERT_EQ(now.exit_code, 0) << now.err;
  EXPECT_EQ(former.exit_code, 0) << former.err;
  EXPECT_EQ(nlohmann::json::parse(now.out)["planner"], "queue");
  EXPECT_EQ(now.out, former.out);
}

TEST(RenamedFlagsTest, ReplayListBlocksAndOffsetsListAlike) {
  const std::string replay = "replay tests/cli/data/small.trace --json ";
  const testing::CommandOutput now = RunTensormem(replay + "--list-blocks");
  const testing::CommandOutput former = RunTensormem(replay + "--offsets");
  ASSERT_EQ(now.exit_code, 0) << now.err;
  ASSERT_EQ(former.exit_code, 0) << former.err;
  const nlohmann::json blocks = nlohmann::json::parse(now.out)["offsets"];
  EXPECT_FALSE(blocks.empty());
  EXPECT_EQ(blocks, nlohmann::json::parse(former.out)["offsets"]);
}

TEST(RenamedFlagsTest, ConvertSnapshotDeviceAndDeviceReadAlike) {
  const std::string snapshot =
      "bench/results/gpu/2026-11-28-h200-5/snapshots/train-resnet50.pickle.gz";
  const std::string out = FreshDirectory("renamed_flags");
  const testing::CommandOutput now = RunTensormem(
      "convert " + snapshot + " " + out + "/now.trace --snapshot-device 0");
  const testing::CommandOutput former = RunTensormem(
      "convert " + snapshot + " " + out + "/former.trace --device 0");
  ASSERT_EQ(now.exit_code, 0) << now.err;
  ASSERT_EQ(former.exit_code, 0) << former.err;
  const std::string converted = ReadFileOrEmpty(out + "/now.trace");
  EXPECT_FALSE(converted.empty());
  EXPECT_EQ(converted, ReadFileOrEmpty(out + "/former.trace"));
  // The snapshot has one device: asking for another is refused either way.
  EXPECT_EQ(RunTensormem("convert " + snapshot + " " + out +
                         "/none.trace --snapshot-device 3")
                .exit_code,
            1);
}

}  // namespace
}  // namespace tensormem
