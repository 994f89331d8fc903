// The PyTorch plug-in's allocator stack and options, without PyTorch.
#include "torch/plugin_allocator.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tensormem/core/units.h"
#include "tensormem/trace/trace_io.h"
#include "torch/plugin_options.h"

namespace tensormem {
namespace {

auto GetenvFrom(const std::map<std::string, std::string>& variables) {
  return [variables](const char* name) -> const char* {
    auto it = variables.find(name);
    return it == variables.end() ? nullptr : it->second.c_str();
  };
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name;
}

TEST(PluginOptionsTest, DefaultsWithoutEnvironment) {
  absl::StatusOr<PluginOptions> options =
      OptionsFromEnvironment(GetenvFrom({}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->allocator.memory_limit.has_value());
  EXPECT_EQ(options->allocator.sub_allocator, "vmm");
  EXPECT_EQ(options->allocator.policy, "tight");
  EXPECT_TRUE(options->allocator.growth);
  EXPECT_FALSE(options->allocator.garbage_collection);
  EXPECT_GT(ResolvedMemoryLimit(*options), 64 * kMiB);  // the machine's memory
}

TEST(PluginOptionsTest, ReadsEveryVariable) {
  absl::StatusOr<PluginOptions> options = OptionsFromEnvironment(GetenvFrom({
      {"TENSORMEM_MEMORY_LIMIT", "2GiB"},
      {"TENSORMEM_SUB_ALLOCATOR", "vmm"},
      {"TENSORMEM_GROWTH", "false"},
      {"TENSORMEM_GC", "1"},
      {"TENSORMEM_POLICY", "pytorch"},
      {"TENSORMEM_CONFIG", "max_split_size_mb:64"},
      {"TENSORMEM_TRACE", "/tmp/x.trace"},
      {"TENSORMEM_REPORT", "/tmp/x.json"},
  }));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->allocator.memory_limit, 2 * kGiB);
  EXPECT_EQ(options->allocator.sub_allocator, "vmm");
  EXPECT_EQ(options->allocator.policy, "pytorch");
  EXPECT_EQ(options->allocator.config, "max_split_size_mb:64");
  EXPECT_FALSE(options->allocator.growth);
  EXPECT_TRUE(options->allocator.garbage_collection);
  EXPECT_EQ(options->trace_path, "/tmp/x.trace");
  EXPECT_EQ(options->report_path, "/tmp/x.json");
}

TEST(PluginOptionsTest, BadVariablesNameThemselves) {
  absl::StatusOr<PluginOptions> limit =
      OptionsFromEnvironment(GetenvFrom({{"TENSORMEM_MEMORY_LIMIT", "lots"}}));
  ASSERT_FALSE(limit.ok());
  EXPECT_NE(limit.status().message().find("TENSORMEM_MEMORY_LIMIT"),
            std::string::npos);
  absl::StatusOr<PluginOptions> kind = OptionsFromEnvironment(
      GetenvFrom({{"TENSORMEM_SUB_ALLOCATOR", "simulated"}}));
  ASSERT_FALSE(kind.ok());
  EXPECT_NE(kind.status().message().find("simulated"), std::string::npos);
  absl::StatusOr<PluginOptions> growth =
      OptionsFromEnvironment(GetenvFrom({{"TENSORMEM_GROWTH", "maybe"}}));
  ASSERT_FALSE(growth.ok());
  EXPECT_NE(growth.status().message().find("maybe"), std::string::npos);
}

TEST(PluginOptionsTest, JsonOverridesAndRejectsTypos) {
  PluginOptions options;
  ASSERT_TRUE(ApplyOptionsJson(R"({"memory_limit": "64M", "allow_growth": false,
                                   "sub_allocator": "vmm", "report_path": "r.json"})",
                               &options)
                  .ok());
  EXPECT_EQ(options.allocator.memory_limit, 64 * kMiB);
  EXPECT_FALSE(options.allocator.growth);
  EXPECT_EQ(options.allocator.sub_allocator, "vmm");
  EXPECT_EQ(options.report_path, "r.json");
  ASSERT_TRUE(ApplyOptionsJson(R"({"memory_limit": 4096})", &options).ok());
  EXPECT_EQ(options.allocator.memory_limit, 4096u);

  absl::Status typo = ApplyOptionsJson(R"({"memory_limt": 1})", &options);
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.message().find("memory_limt"), std::string::npos);
  EXPECT_NE(typo.message().find("also takes trace_path"), std::string::npos);
  // A bad value of a known key says nothing about the plug-in's other keys.
  absl::Status bad_limit =
      ApplyOptionsJson(R"({"memory_limit": "lots"})", &options);
  ASSERT_FALSE(bad_limit.ok());
  EXPECT_NE(bad_limit.message().find("lots"), std::string::npos);
  EXPECT_EQ(bad_limit.message().find("trace_path"), std::string::npos);
  EXPECT_FALSE(ApplyOptionsJson(R"({"allow_growth": "yes"})", &options).ok());
  EXPECT_FALSE(ApplyOptionsJson("[1, 2]", &options).ok());
  // Names are checked at once, not when the first allocation builds the
  // allocator.
  absl::Status policy = ApplyOptionsJson(R"({"policy": "tff"})", &options);
  ASSERT_FALSE(policy.ok());
  EXPECT_NE(policy.message().find("unknown policy 'tff'"), std::string::npos);
  absl::Status simulated =
      ApplyOptionsJson(R"({"sub_allocator": "simulated"})", &options);
  ASSERT_FALSE(simulated.ok());
  EXPECT_NE(simulated.message().find("host or vmm"), std::string::npos);
  EXPECT_FALSE(ApplyOptionsJson("{not json", &options).ok());
}

TEST(PluginAllocatorTest, ServesAlignedBlocksAndCountsLiveBytes) {
  PluginOptions options;
  options.allocator.memory_limit = 64 * kMiB;
  absl::StatusOr<std::unique_ptr<PluginAllocator>> allocator =
      PluginAllocator::Create(options);
  ASSERT_TRUE(allocator.ok()) << allocator.status();
  void* a = (*allocator)->Allocate(1000);
  void* b = (*allocator)->Allocate(3000);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % PluginAllocator::kTensorAlignment,
            0u);
  EXPECT_EQ((*allocator)->Allocate(0), nullptr);
  (*allocator)->Free(a);

  nlohmann::json stats = (*allocator)->StatsJson();
  EXPECT_EQ(stats["num_allocs"], 2);
  EXPECT_EQ(stats["num_frees"], 1);
  EXPECT_EQ(stats["live_bytes"], 3000);
  EXPECT_EQ(stats["peak_live_bytes"], 4000);
  EXPECT_GE(stats["peak_bytes_in_use"].get<uint64_t>(), 4000u);
  EXPECT_EQ(stats["bytes_limit"], 64 * kMiB);

  (*allocator)->ResetPeak();
  stats = (*allocator)->StatsJson();
  EXPECT_EQ(stats["peak_live_bytes"], 3000);
  EXPECT_EQ(stats["num_allocs"], 0);
  nlohmann::json dump = (*allocator)->DumpJson();
  EXPECT_FALSE(dump["regions"].empty());
  (*allocator)->Free(b);
  EXPECT_EQ((*allocator)->StatsJson()["live_bytes"], 0);
}

TEST(PluginAllocatorTest, PlannedReportsItsLoop) {
  PluginOptions options;
  options.allocator.memory_limit = 256 * kMiB;
  options.allocator.policy = "planned";
  options.allocator.config = "planning:inline";
  absl::StatusOr<std::unique_ptr<PluginAllocator>> allocator =
      PluginAllocator::Create(options);
  ASSERT_TRUE(allocator.ok()) << allocator.status();
  void* weights = (*allocator)->Allocate(8 * kMiB);
  for (int step = 0; step < 6; ++step) {
    (*allocator)->MarkIteration();
    void* activation = (*allocator)->Allocate(3 * kMiB);
    void* scratch = (*allocator)->Allocate(kMiB);
    (*allocator)->Free(scratch);
    (*allocator)->Free(activation);
  }
  (*allocator)->MarkIteration();
  const nlohmann::json stats = (*allocator)->StatsJson();
  // Marks 1-3 compare two iterations, the fourth is followed, 4-6 served.
  EXPECT_EQ(stats["planned_iterations"], 3);
  EXPECT_EQ(stats["loop_plans"]["found"], 1);
  EXPECT_EQ(stats["loop_plans"]["taken_over"], 1);
  EXPECT_TRUE(stats.contains("steady_peak_pool_bytes"));
  (*allocator)->Free(weights);

  options.allocator.policy = "tight";
  options.allocator.config = "";
  absl::StatusOr<std::unique_ptr<PluginAllocator>> tight =
      PluginAllocator::Create(options);
  ASSERT_TRUE(tight.ok()) << tight.status();
  EXPECT_FALSE((*tight)->StatsJson().contains("loop_plans"));
}

TEST(PluginAllocatorTest, OutOfMemoryExplainsItself) {
  PluginOptions options;
  options.allocator.memory_limit = 4 * kMiB;
  absl::StatusOr<std::unique_ptr<PluginAllocator>> allocator =
      PluginAllocator::Create(options);
  ASSERT_TRUE(allocator.ok()) << allocator.status();
  EXPECT_EQ((*allocator)->Allocate(8 * kMiB), nullptr);
  const std::string report = (*allocator)->FailureReport(8 * kMiB);
  EXPECT_NE(report.find("tensormem: out of memory"), std::string::npos)
      << report;
  EXPECT_NE(report.find(std::to_string(4 * kMiB)), std::string::npos) << report;
  EXPECT_EQ((*allocator)->StatsJson()["num_failed_allocs"], 1);
}

TEST(PluginAllocatorTest, RecordsTraceAndWritesReportWhenFinished) {
  PluginOptions options;
  options.allocator.memory_limit = 64 * kMiB;
  options.trace_path = TempPath("plugin_test.trace");
  options.report_path = TempPath("plugin_test_report.json");
  absl::StatusOr<std::unique_ptr<PluginAllocator>> allocator =
      PluginAllocator::Create(options);
  ASSERT_TRUE(allocator.ok()) << allocator.status();
  void* a = (*allocator)->Allocate(512);
  void* b = (*allocator)->Allocate(2048);
  (*allocator)->Free(a);
  ASSERT_TRUE((*allocator)->Finish().ok());
  (*allocator)->Free(b);  // after Finish: still freed, no longer recorded

  absl::StatusOr<Trace> trace = ReadTrace(options.trace_path);
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->events.size(), 3u);
  EXPECT_EQ(trace->events[0].op, TraceOp::kAlloc);
  EXPECT_EQ(trace->events[0].bytes, 512u);
  EXPECT_EQ(trace->events[1].bytes, 2048u);
  EXPECT_EQ(trace->events[2].op, TraceOp::kFree);
  EXPECT_EQ(trace->events[2].id, trace->events[0].id);

  std::ifstream report_file(options.report_path);
  std::stringstream text;
  text << report_file.rdbuf();
  nlohmann::json report = nlohmann::json::parse(text.str(), nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << text.str();
  EXPECT_EQ(report["stats"]["num_allocs"], 2);
  EXPECT_TRUE(report["memory_dump"].contains("regions"));
}

TEST(PluginAllocatorTest, UnwritableTraceIsAnErrorNamingThePath) {
  PluginOptions options;
  options.trace_path = "/nonexistent-dir/run.trace";
  absl::StatusOr<std::unique_ptr<PluginAllocator>> allocator =
      PluginAllocator::Create(options);
  ASSERT_FALSE(allocator.ok());
  EXPECT_NE(allocator.status().message().find("/nonexistent-dir/run.trace"),
            std::string::npos);
}

TEST(PluginAllocatorTest, HostUpstreamServesBlocks) {
  PluginOptions options;
  options.allocator.memory_limit = 256 * kMiB;
  options.allocator.sub_allocator = "host";
  absl::StatusOr<std::unique_ptr<PluginAllocator>> allocator =
      PluginAllocator::Create(options);
  ASSERT_TRUE(allocator.ok()) << allocator.status();
  void* block = (*allocator)->Allocate(10 * kMiB);
  ASSERT_NE(block, nullptr);
  static_cast<char*>(block)[10 * kMiB - 1] = 1;  // real memory, writable
  (*allocator)->Free(block);
  EXPECT_EQ((*allocator)->StatsJson()["sub_allocator"], "host");
}

// Eight 4 MiB tensors, every other one freed, then a 16 MiB one that no hole
// holds: the pool's peak with the plug-in's defaults and over `sub_allocator`.
uint64_t PeakPoolAfterHoles(const std::string& sub_allocator) {
  PluginOptions options;
  options.allocator.memory_limit = 256 * kMiB;
  if (!sub_allocator.empty()) options.allocator.sub_allocator = sub_allocator;
  absl::StatusOr<std::unique_ptr<PluginAllocator>> allocator =
      PluginAllocator::Create(options);
  EXPECT_TRUE(allocator.ok()) << allocator.status();
  if (!allocator.ok()) return 0;
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i)
    blocks.push_back((*allocator)->Allocate(4 * kMiB));
  for (int i = 0; i < 8; i += 2) (*allocator)->Free(blocks[i]);
  void* large = (*allocator)->Allocate(16 * kMiB);
  EXPECT_NE(large, nullptr);
  static_cast<char*>(large)[16 * kMiB - 1] = 1;
  const nlohmann::json stats = (*allocator)->StatsJson();
  EXPECT_EQ(stats["peak_live_bytes"], 32 * kMiB);
  (*allocator)->Free(large);
  for (int i = 1; i < 8; i += 2) (*allocator)->Free(blocks[i]);
  return stats["peak_pool_bytes"].get<uint64_t>();
}

// The default upstream gives the holes' pages back before the pool grows, so
// the pool stays at peak live; host memory keeps the holes and adds 16 MiB.
TEST(PluginAllocatorTest, DefaultUpstreamGivesHolesBackBeforeGrowing) {
  EXPECT_EQ(PeakPoolAfterHoles(""), 32 * kMiB);
  EXPECT_GE(PeakPoolAfterHoles("host"), 48 * kMiB);
}

// Holes given back keep their addresses: the default's address space is
// larger than its limit, so the pool still grows to the limit past them.
TEST(PluginAllocatorTest, DefaultGrowsToItsLimitPastGivenBackHoles) {
  PluginOptions options;
  options.allocator.memory_limit = 32 * kMiB;
  absl::StatusOr<std::unique_ptr<PluginAllocator>> allocator =
      PluginAllocator::Create(options);
  ASSERT_TRUE(allocator.ok()) << allocator.status();
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i)
    blocks.push_back((*allocator)->Allocate(8 * kMiB));
  ASSERT_EQ((*allocator)->Allocate(4 * kMiB), nullptr);  // the limit holds
  (*allocator)->Free(blocks[0]);
  (*allocator)->Free(blocks[2]);
  void* large = (*allocator)->Allocate(12 * kMiB);  // fits no 8 MiB hole
  ASSERT_NE(large, nullptr) << (*allocator)->FailureReport(12 * kMiB);
  EXPECT_LE((*allocator)->StatsJson()["pool_bytes"].get<uint64_t>(), 32 * kMiB);
  EXPECT_EQ((*allocator)->Allocate(8 * kMiB), nullptr);  // still the limit
  (*allocator)->Free(large);
  (*allocator)->Free(blocks[1]);
  (*allocator)->Free(blocks[3]);
}

}  // namespace
}  // namespace tensormem
