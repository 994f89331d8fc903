// End-to-end: `tensormem replay`, `report` and `bench` through the built
// binary.
#include <filesystem>
#include <string>

#include "cli/cli_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tensormem::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kData[] = "tests/cli/data/";

nlohmann::json RunJson(const std::string& arguments) {
  const CommandOutput output = RunTensormem(arguments);
  EXPECT_EQ(output.exit_code, 0) << arguments << "\n" << output.err;
  return nlohmann::json::parse(output.out, nullptr, /*allow_exceptions=*/false);
}

TEST(ReplayCliTest, JsonMetricsOfASmallTrace) {
  const nlohmann::json json =
      RunJson(std::string("replay ") + kData + "small.trace --json");
  ASSERT_TRUE(json.is_object());
  EXPECT_EQ(json["allocator"], "bfc");
  EXPECT_EQ(json["events"], 6);
  EXPECT_EQ(json["allocs"], 3);
  EXPECT_EQ(json["frees"], 3);
  EXPECT_EQ(json["failed_allocs"], 0);
  EXPECT_EQ(json["peak_live_bytes"], 2000);
  EXPECT_EQ(json["peak_in_use_bytes"], 2048);   // each block rounded to 1 KiB
  EXPECT_EQ(json["peak_pool_bytes"], 2 << 20);  // the first 2 MiB region
  EXPECT_DOUBLE_EQ(json["fragmentation"].get<double>(), (2 << 20) / 2000.0);
  EXPECT_GT(json["ns_per_op"].get<double>(), 0);
  EXPECT_EQ(json["stats"]["num_allocs"], 3);
  EXPECT_EQ(json["stats"]["peak_bytes_in_use"], 2048);
}

TEST(ReplayCliTest, MinLimitIsExactOnAHandComputedTrace) {
  // Without growth the pool is one region of the limit: 2048 B holds both
  // 1 KiB chunks; at 1792 B the first request takes the whole region.
  const nlohmann::json json = RunJson(std::string("replay ") + kData +
                                      "small.trace --min-limit --json");
  EXPECT_EQ(json["min_limit_bytes"], 2048);
  EXPECT_DOUBLE_EQ(json["min_limit_ratio"].get<double>(), 2048 / 2000.0);
}

TEST(ReplayCliTest, MinLimitScansBelowTheBisectionOnANonMonotoneTrace) {
  const std::string trace = std::string(kData) + "non_monotone.trace";
  // The trace is not monotone for tf: a larger limit fails, a smaller serves.
  EXPECT_EQ(RunJson("replay " + trace +
                    " --policy tf --no-growth --memory-limit 6912 --json")
                ["failed_allocs"],
            1);
  EXPECT_EQ(RunJson("replay " + trace +
                    " --policy tf --no-growth --memory-limit 5632 --json")
                ["failed_allocs"],
            0);
  const nlohmann::json json =
      RunJson("replay " + trace + " --policy tf --min-limit --json");
  EXPECT_EQ(json["min_limit_method"], "exact scan");
  EXPECT_EQ(json["min_limit_bisection_bytes"], 7168);
  EXPECT_EQ(json["min_limit_bytes"], 5632);
  const CommandOutput text =
      RunTensormem("replay " + trace + " --policy tf --min-limit");
  EXPECT_THAT(text.out, HasSubstr("exact scan"));
}

TEST(ReplayCliTest, ReadsAPytorchSnapshotLikeItsConvertedTrace) {
  const std::string snapshot = "tests/data/trace/snapshot_protocol4.pickle";
  for (int device : {0, 1}) {
    const std::string device_flag = " --device " + std::to_string(device);
    const nlohmann::json direct =
        RunJson("replay " + snapshot + device_flag + " --json");
    const nlohmann::json converted =
        RunJson("replay tests/data/trace/snapshot_device" +
                std::to_string(device) + ".trace --json");
    ASSERT_TRUE(direct.is_object());
    EXPECT_GT(direct["events"].get<int>(), 0);
    for (const char* key : {"events", "allocs", "failed_allocs",
                            "peak_live_bytes", "peak_pool_bytes"}) {
      EXPECT_EQ(direct[key], converted[key]) << key << device_flag;
    }
  }
  const CommandOutput missing =
      RunTensormem("replay " + snapshot + " --device 3 --json");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("no device 3"));
}

TEST(ReplayCliTest, OffsetsFollowTensorFlowsDecisions) {
  const nlohmann::json json = RunJson(
      std::string("replay ") + kData +
      "tf_600k.trace --policy tf --no-growth --memory-limit 1M --list-blocks "
      "--json");
  EXPECT_EQ(json["failed_allocs"], 1);
  ASSERT_EQ(json["offsets"].size(), 2u);
  EXPECT_EQ(json["offsets"][0]["id"], 1);
  EXPECT_EQ(json["offsets"][0]["offset"], 0);
  EXPECT_EQ(json["offsets"][0]["allocated"],
            1 << 20);  // the whole chunk, unsplit
  EXPECT_EQ(json["offsets"][1]["id"], 2);
  EXPECT_TRUE(json["offsets"][1]["offset"].is_null());
  EXPECT_TRUE(json["offsets"][1]["allocated"].is_null());
  EXPECT_EQ(json["stats"]["bytes_limit"], 1 << 20);
}

TEST(ReplayCliTest, TableAndDump) {
  const CommandOutput output = RunTensormem(std::string("replay ") + kData +
                                            "small.trace --dump --offsets");
  ASSERT_EQ(output.exit_code, 0) << output.err;
  EXPECT_THAT(output.out, HasSubstr("peak live"));
  EXPECT_THAT(output.out, HasSubstr("1.95KiB (2000 B)"));
  EXPECT_THAT(output.out, HasSubstr("allocated"));
  EXPECT_GT(output.out.size(), 400u);  // the dump follows the table
}

TEST(ReplayCliTest, SystemAllocatorRuns) {
  const nlohmann::json json = RunJson(std::string("replay ") + kData +
                                      "small.trace --allocator system --json");
  EXPECT_EQ(json["allocator"], "system");
  EXPECT_EQ(json["peak_live_bytes"], 2000);
  EXPECT_GE(json["peak_in_use_bytes"].get<int64_t>(), 2000);
}

TEST(ReplayCliTest, ErrorsNameTheProblem) {
  CommandOutput output = RunTensormem(std::string("replay ") + kData +
                                      "small.trace --allocator foo");
  EXPECT_EQ(output.exit_code, 2);
  EXPECT_THAT(output.err, HasSubstr("unknown allocator 'foo'"));
  output = RunTensormem(std::string("replay ") + kData +
                        "small.trace --memory-limit 12Q");
  EXPECT_EQ(output.exit_code, 2);
  EXPECT_THAT(output.err, HasSubstr("12Q"));
  output = RunTensormem(std::string("replay ") + kData +
                        "small.trace --allocator system --gc");
  EXPECT_EQ(output.exit_code, 2);
  EXPECT_THAT(output.err, HasSubstr("bfc only"));
  output = RunTensormem(std::string("replay ") + kData + "bad.trace");
  EXPECT_EQ(output.exit_code, 1);
  EXPECT_THAT(output.err, HasSubstr("bad.trace:2:"));
  output = RunTensormem("replay no/such.trace");
  EXPECT_NE(output.exit_code, 0);
  EXPECT_THAT(output.err, HasSubstr("no/such.trace"));
}

TEST(ReportCliTest, TraceReportHasTimelinePlacementAndFailure) {
  const std::string html = FreshDirectory("report") + "/tf.html";
  const nlohmann::json json = RunJson(
      std::string("report ") + kData +
      "tf_600k.trace --policy tf --no-growth --memory-limit 1M --html " + html +
      " --json");
  EXPECT_EQ(json["kind"], "trace");
  EXPECT_EQ(json["failed_allocs"], 1);
  const std::string page = ReadFileOrEmpty(html);
  EXPECT_THAT(page, HasSubstr("class=\"tm-timeline-chart\""));
  EXPECT_THAT(page, HasSubstr("class=\"tm-placement-chart\""));
  EXPECT_THAT(page, HasSubstr("Failed allocation at event 1: id 2, 256B"));
  EXPECT_THAT(page, HasSubstr("No free chunk inside the pool"));
}

TEST(ReportCliTest, PytorchSnapshotAndRmmLogAreReplayed) {
  const std::string directory = FreshDirectory("report_inputs");
  const nlohmann::json snapshot = RunJson(
      "report tests/data/trace/snapshot_protocol4.pickle --device 1 "
      "--min-limit --html " +
      directory + "/snapshot.html --json");
  EXPECT_EQ(snapshot["kind"], "trace");
  EXPECT_EQ(snapshot["peak_live_bytes"],
            RunJson("replay tests/data/trace/snapshot_device1.trace --json")
                ["peak_live_bytes"]);
  EXPECT_EQ(snapshot["min_limit_method"], "exact scan");
  EXPECT_THAT(ReadFileOrEmpty(directory + "/snapshot.html"),
              HasSubstr("minimum limit found by"));
  // An RMM log is a .csv too, but a trace, not a plan.
  const nlohmann::json rmm = RunJson(
      "report tests/data/trace/rmm_log.csv "
      "--html " +
      directory + "/rmm.html --json");
  EXPECT_EQ(rmm["kind"], "trace");
}

TEST(ReportCliTest, BufferSetNeedsOffsets) {
  const std::string html = FreshDirectory("report_plan") + "/plan.html";
  CommandOutput output = RunTensormem(std::string("report ") + kData +
                                      "unplaced.csv --html " + html);
  EXPECT_EQ(output.exit_code, 1);
  EXPECT_THAT(output.err, HasSubstr("has no offset"));
  EXPECT_FALSE(std::filesystem::exists(html));
}

TEST(WhatIfCliTest, SnapshotThroughSeveralPoliciesWithADeviceLimit) {
  const std::string html = FreshDirectory("whatif") + "/whatif.html";
  const nlohmann::json json = RunJson(
      "whatif tests/data/trace/snapshot_protocol4.pickle --policies "
      "\"tf; pytorch\" --try \"pytorch "
      "config=max_split_size_mb:512\" --device-memory 8K --html " +
      html + " --json");
  ASSERT_EQ(json["candidates"].size(), 3u);
  EXPECT_EQ(json["peak_live_bytes"], 5340);
  EXPECT_EQ(json["device_memory_bytes"], 8192);
  const nlohmann::json& tf = json["candidates"][0];
  EXPECT_EQ(tf["candidate"], "tf");
  EXPECT_EQ(tf["fits_device_memory"], true);
  EXPECT_GE(tf["min_limit_bytes"].get<uint64_t>(), 5340u);
  EXPECT_LE(tf["min_limit_bytes"].get<uint64_t>(), 8192u);
  EXPECT_EQ(tf["min_limit_method"], "exact scan");
  // PyTorch's smallest segment is 2 MiB: the first request cannot be served.
  const nlohmann::json& pytorch = json["candidates"][1];
  EXPECT_EQ(pytorch["fits_device_memory"], false);
  EXPECT_EQ(pytorch["out_of_memory"]["event"], 0);
  EXPECT_EQ(pytorch["out_of_memory"]["bytes"], 500);
  EXPECT_THAT(pytorch["out_of_memory"]["explanation"].get<std::string>(),
              HasSubstr("out of memory"));
  // One 2 MiB small segment per stream: the snapshot uses streams 0 and 1.
  EXPECT_EQ(pytorch["peak_reserved_bytes"], 4 << 20);
  EXPECT_EQ(json["candidates"][2]["candidate"],
            "pytorch config=max_split_size_mb:512");
  EXPECT_THAT(ReadFileOrEmpty(html), HasSubstr("tm-timeline-chart"));

  const CommandOutput text = RunTensormem(
      "whatif tests/cli/data/small.trace --policies tf --device-memory 1K");
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("OOM at event 1"));
  EXPECT_THAT(text.out, HasSubstr("tf: out of memory at event 1"));

  const CommandOutput bad = RunTensormem(
      "whatif tests/cli/data/small.trace --policies \"tf; nosuch\"");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("candidate 'nosuch'"));
}

TEST(WhatIfCliTest, SnapshotGetsTheRecordedRowAndARecommendation) {
  const char* snapshot =
      "bench/results/gpu/2026-11-28-h200-2/snapshots/max_split_128.pickle.gz";
  const nlohmann::json json =
      RunJson(std::string("whatif ") + snapshot + " --no-min-limit --json");
  const nlohmann::json& recorded = json["recorded"];
  EXPECT_EQ(recorded["config"], "max_split_size_mb:128");
  EXPECT_EQ(recorded["matches"], true);
  EXPECT_EQ(recorded["as_run"]["divergences"], 0);
  // The recorded settings were not among the candidates: they join them.
  EXPECT_EQ(recorded["candidate"], "pytorch config=max_split_size_mb:128");
  ASSERT_EQ(json["candidates"].size(), 6u);
  const nlohmann::json& advice = json["recommendation"];
  EXPECT_EQ(advice["baseline"]["candidate"], recorded["candidate"]);
  EXPECT_GT(advice["best_pytorch"]["saving_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(advice["tight"]["candidate"], "tight");

  const CommandOutput text =
      RunTensormem(std::string("whatif ") + snapshot + " --no-min-limit");
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("recorded (PyTorch on the GPU)"));
  EXPECT_THAT(text.out, HasSubstr("matches the recording"));
  EXPECT_THAT(text.out, HasSubstr("recommendation:"));
  EXPECT_THAT(text.out, HasSubstr("PYTORCH_CUDA_ALLOC_CONF="));
}

TEST(BenchCliTest, CorpusTableAndReport) {
  const std::string out = FreshDirectory("bench");
  const nlohmann::json json =
      RunJson(std::string("bench --corpus ") + kData + "corpus --out " + out +
              " --strategy all,optimal --json");
  ASSERT_EQ(json["workloads"].size(), 2u);
  const nlohmann::json& set = json["workloads"][0];  // placed.csv sorts first
  EXPECT_EQ(set["kind"], "buffer set");
  EXPECT_EQ(set["peak_live_bytes"], 3072);
  // Every planner `plan --strategy all` runs, and optimal added to them.
  EXPECT_TRUE(set["plan_over_live"].contains("naive"));
  EXPECT_DOUBLE_EQ(set["plan_over_live"]["optimal"].get<double>(), 1.0);
  const nlohmann::json& trace = json["workloads"][1];
  EXPECT_EQ(trace["workload"], "small");
  EXPECT_EQ(trace["peak_live_bytes"], 2000);
  EXPECT_EQ(trace["tight_peak_pool_bytes"], 2 << 20);
  // One ratio per compared allocator: each grows by 2 MiB at least.
  for (const char* allocator :
       {"tf", "pytorch", "pytorch + expandable segments", "tight"}) {
    EXPECT_DOUBLE_EQ(trace["reserved_over_live"][allocator].get<double>(),
                     (2 << 20) / 2000.0)
        << allocator;
  }
  EXPECT_DOUBLE_EQ(trace["min_limit_ratio"].get<double>(), 2048 / 2000.0);
  EXPECT_EQ(trace["min_limit_method"], "exact scan");
  EXPECT_GE(json["summary"].size(), 2u);
  const std::string report = ReadFileOrEmpty(out + "/report.html");
  EXPECT_THAT(report, HasSubstr("<a href=\"small.html\">small</a>"));
  EXPECT_THAT(report, HasSubstr("Allocators on the traces"));
  EXPECT_THAT(report, HasSubstr("Planners on the buffer sets"));
  EXPECT_TRUE(std::filesystem::exists(out + "/small.html"));

  // Without --json: the summary, not a row per workload.
  const CommandOutput text = RunTensormem(std::string("bench --corpus ") +
                                          kData + "corpus --out " + out);
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("reserved / peak live on 1 traces"));
  EXPECT_THAT(text.out, Not(HasSubstr("system ns/op")));
}

TEST(BenchCliTest, SnapshotsBesideWhatTheirGpuReserved) {
  const std::string out = FreshDirectory("bench-snapshots");
  const nlohmann::json json = RunJson(
      std::string("bench --corpus ") + kData + "corpus --out " + out +
      " --snapshots bench/results/gpu/2026-11-28-h200-2/snapshots --json");
  ASSERT_EQ(json["snapshots"].size(), 6u);
  for (const nlohmann::json& snapshot : json["snapshots"]) {
    EXPECT_EQ(snapshot["pytorch_matches"], true) << snapshot["snapshot"];
    EXPECT_GT(snapshot["recorded_over_live"].get<double>(), 1.0);
    // tight holds less than PyTorch's allocator did on every one.
    EXPECT_LT(snapshot["reserved_over_live"]["tight"].get<double>(),
              snapshot["recorded_over_live"].get<double>());
  }
  EXPECT_EQ(json["snapshots"][0]["snapshot"], "default");
  EXPECT_THAT(ReadFileOrEmpty(out + "/report.html"),
              HasSubstr("Real GPU snapshots"));
}

TEST(BenchCliTest, PolicyTableComparesEveryPolicy) {
  const nlohmann::json json = RunJson(std::string("bench --corpus ") + kData +
                                      "corpus --policies all --json");
  ASSERT_EQ(json["traces"].size(), 1u);
  const nlohmann::json& policies = json["traces"][0]["policies"];
  ASSERT_EQ(policies.size(), 5u);
  for (const char* label :
       {"tight", "tf", "pytorch", "pytorch config=expandable_segments:True",
        "planned"}) {
    ASSERT_TRUE(policies.contains(label)) << label;
    EXPECT_GE(policies[label]["min_limit_over_live"].get<double>(), 1.0);
    EXPECT_GT(policies[label]["ns_per_op"].get<double>(), 0);
    EXPECT_GT(policies[label]["warm_ns_per_op"].get<double>(), 0);
    EXPECT_EQ(policies[label]["failed_allocs"], 0);
  }
  // 2,000 live bytes: 256-byte rounding needs 2,048; PyTorch's smallest
  // segment is 2 MiB.
  EXPECT_DOUBLE_EQ(policies["tight"]["min_limit_over_live"].get<double>(),
                   2048 / 2000.0);
  EXPECT_DOUBLE_EQ(policies["pytorch"]["min_limit_over_live"].get<double>(),
                   (2 << 20) / 2000.0);
  // No loop in that trace: planned says so, the others learn none.
  EXPECT_EQ(policies["planned"]["no_steady_state"], "no loop found");
  EXPECT_FALSE(policies["tight"].contains("no_steady_state"));

  const CommandOutput unknown = RunTensormem(
      std::string("bench --corpus ") + kData + "corpus --policies tf,nope");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("unknown policy 'nope'"));
  const CommandOutput unbalanced =
      RunTensormem(std::string("bench --corpus ") + kData +
                   "corpus --policies 'pytorch[max_split_size_mb:64'");
  EXPECT_EQ(unbalanced.exit_code, 2);
  EXPECT_THAT(unbalanced.err, HasSubstr("unbalanced brackets"));
}

TEST(BenchCliTest, CorpusFoldersAddUpAndNamesMustDiffer) {
  const std::string out = FreshDirectory("bench_folders");
  const std::string corpus = std::string("--corpus ") + kData + "corpus";
  const std::string folder = FreshDirectory("bench_second_corpus");
  std::filesystem::copy_file(
      std::string(TENSORMEM_SOURCE_DIR "/") + kData + "small.trace",
      folder + "/other.trace");
  const std::string traces = "--corpus " + folder;
  const size_t alone =
      RunJson("bench " + corpus + " --out " + out + " --json")["workloads"]
          .size();
  const size_t other =
      RunJson("bench " + traces + " --out " + out + " --json")["workloads"]
          .size();
  const nlohmann::json both =
      RunJson("bench " + corpus + " " + traces + " --out " + out + " --json");
  EXPECT_EQ(both["workloads"].size(), alone + other);
  EXPECT_THAT(both["corpus"].get<std::string>(), HasSubstr(folder));

  // The same folder twice adds nothing; two files of one name are refused.
  EXPECT_EQ(RunJson("bench " + corpus + " " + corpus + " --out " + out +
                    " --json")["workloads"]
                .size(),
            alone);
  std::filesystem::copy_file(folder + "/other.trace", folder + "/small.trace");
  const CommandOutput clash =
      RunTensormem("bench " + corpus + " " + traces + " --out " + out);
  EXPECT_EQ(clash.exit_code, 2);
  EXPECT_THAT(clash.err, HasSubstr("are both named 'small'"));
}

TEST(HelpTest, EveryCommandShowsAnExample) {
  for (const char* command : {"replay", "report", "bench"}) {
    const CommandOutput output = RunTensormem(std::string(command) + " --help");
    EXPECT_EQ(output.exit_code, 0) << command;
    EXPECT_THAT(output.out, HasSubstr("Example: tensormem ")) << command;
  }
}

}  // namespace
}  // namespace tensormem::testing
