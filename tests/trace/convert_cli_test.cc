// End-to-end tests of `tensormem convert` through the built binary.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

struct RunResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr, merged
};

RunResult RunConvert(const std::string& arguments) {
  const std::string command =
      std::string(TENSORMEM_BINARY) + " convert " + arguments + " 2>&1";
  RunResult result;
  std::FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char chunk[4096];
  size_t read;
  while ((read = std::fread(chunk, 1, sizeof(chunk), pipe)) > 0)
    result.out.append(chunk, read);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string Data(const std::string& name) {
  return std::string(TENSORMEM_TEST_DATA) + "/trace/" + name;
}

std::string Temp(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) /
          // CTest runs test processes in parallel: names are per process.
          (std::to_string(getpid()) + "_" + name))
      .string();
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(ConvertCliTest, PytorchSnapshotToTraceWithJsonSummary) {
  const RunResult result = RunConvert(Data("snapshot_protocol2.pickle") + " " +
                                      Temp("snap.trace") + " --json");
  ASSERT_EQ(result.exit_code, 0) << result.out;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["from"], "pytorch");
  EXPECT_EQ(json["to"], "trace");
  EXPECT_EQ(json["events"], 10);
  // The replay's definitions: 6 allocations succeed, 1 is recorded as failed.
  EXPECT_EQ(json["allocs"], 6);
  EXPECT_EQ(json["frees"], 3);
  EXPECT_EQ(json["failed_allocs"], 1);
  EXPECT_EQ(json["blocks_live_at_start"], 3);
  // Peak live: X 500 + P 1536 + W 2048 + Z 256 + Y 1000, before Z's free.
  EXPECT_EQ(json["peak_live_bytes"], 5340);
  EXPECT_EQ(ReadFile(Temp("snap.trace")),
            ReadFile(Data("snapshot_device0.trace")));
}

TEST(ConvertCliTest, FormatsAreInferredFromNamesAndHeaders) {
  // An RMM log and a buffer set are both .csv: the header decides.
  ASSERT_EQ(
      RunConvert(Data("rmm_log.csv") + " " + Temp("rmm.trace.gz")).exit_code,
      0);
  ASSERT_EQ(
      RunConvert(Temp("rmm.trace.gz") + " " + Temp("rmm_back.trace")).exit_code,
      0);
  EXPECT_EQ(ReadFile(Temp("rmm_back.trace")), ReadFile(Data("rmm_log.trace")));

  ASSERT_EQ(RunConvert(Data("buffers_closed.csv") + " " + Temp("buffers.trace"))
                .exit_code,
            0);
  EXPECT_EQ(ReadFile(Temp("buffers.trace")), ReadFile(Data("buffers.trace")));
}

TEST(ConvertCliTest, CompressedInputsAreInflated) {
  for (const std::string name :
       {"rmm_log.csv", "snapshot_protocol4.pickle", "buffers_closed.csv"}) {
    const std::string gz = Temp(name + ".gz");
    ASSERT_EQ(std::system(("gzip -c " + Data(name) + " > " + gz).c_str()), 0);
    const RunResult plain =
        RunConvert(Data(name) + " " + Temp("plain.trace") + " --json");
    const RunResult compressed =
        RunConvert(gz + " " + Temp("compressed.trace") + " --json");
    ASSERT_EQ(compressed.exit_code, 0) << compressed.out;
    EXPECT_EQ(nlohmann::json::parse(compressed.out)["from"],
              nlohmann::json::parse(plain.out)["from"]);
    EXPECT_EQ(ReadFile(Temp("compressed.trace")), ReadFile(Temp("plain.trace")))
        << name;
  }
}

TEST(ConvertCliTest, TraceToBufferSetInBothConventions) {
  const RunResult half_open =
      RunConvert(Data("buffers.trace") + " " + Temp("b.csv"));
  ASSERT_EQ(half_open.exit_code, 0) << half_open.out;
  EXPECT_EQ(ReadFile(Temp("b.csv")),
            "id,lower,upper,size\n0,0,3,100\n3,1,7,50\n1,2,5,200\n2,4,6,300\n");
  const RunResult closed =
      RunConvert(Data("buffers.trace") + " - --to buffers --closed");
  ASSERT_EQ(closed.exit_code, 0) << closed.out;
  EXPECT_THAT(closed.out,
              HasSubstr("id,first_task,last_task,size\n0,0,2,100\n3,1,6,50\n"));
}

TEST(ConvertCliTest, ErrorsGoToStderrWithExitCodes) {
  const RunResult missing =
      RunConvert(Temp("no_such.trace") + " " + Temp("x.csv"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.out, HasSubstr("tensormem convert: "));
  EXPECT_THAT(missing.out, HasSubstr("no_such.trace: cannot open"));

  std::ofstream(Temp("bad.trace")) << "a 1 8\nf 2\n";
  const RunResult bad = RunConvert(Temp("bad.trace") + " " + Temp("x.csv"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.out,
              HasSubstr("bad.trace:2: free of id 2, which is not live"));

  const RunResult device = RunConvert(Data("snapshot_protocol4.pickle") + " " +
                                      Temp("x.trace") + " --device 3");
  EXPECT_EQ(device.exit_code, 1);
  EXPECT_THAT(device.out, HasSubstr("no device 3"));

  const RunResult json_to_stdout =
      RunConvert(Data("rmm_log.csv") + " - --json");
  EXPECT_EQ(json_to_stdout.exit_code, 2);
  EXPECT_THAT(json_to_stdout.out, HasSubstr("--json"));
}

}  // namespace
}  // namespace tensormem
