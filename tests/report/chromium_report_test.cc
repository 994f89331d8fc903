// Renders generated reports in headless Chromium and checks the DOM the page
// scripts built. Skips (with the reason) only when Chromium is not installed.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/report/html_page.h"
#include "tensormem/report/plan_html.h"
#include "tensormem/report/ratio_chart.h"
#include "tensormem/report/replay_html.h"
#include "tensormem/report/whatif_html.h"
#include "tensormem/trace/replay_allocator.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

std::string FindChromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    const std::string probe =
        std::string("command -v ") + name + " >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return name;
  }
  return "";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The DOM after the page's scripts ran, or "" when Chromium failed.
std::string DumpDom(const std::string& chromium, const std::string& html,
                    const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "profile");
  const std::string page = (dir / "page.html").string();
  EXPECT_TRUE(WriteHtmlFile(page, html).ok());
  const std::string dom = (dir / "dom.html").string();
  const std::string command =
      "timeout 120 " + chromium +
      " --headless --no-sandbox --disable-gpu --disable-background-networking "
      "--no-first-run"
      " --disable-component-update --disable-sync --user-data-dir=" +
      (dir / "profile").string() + " --dump-dom file://" + page + " >" + dom +
      " 2>" + (dir / "stderr").string();
  const int status = std::system(command.c_str());
  EXPECT_EQ(status, 0) << ReadAll((dir / "stderr").string());
  return ReadAll(dom);
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

TEST(ChromiumReportTest, ReplayReportRendersTimelinePlacementAndFailure) {
  const std::string chromium = FindChromium();
  if (chromium.empty())
    GTEST_SKIP() << "chromium is not installed (Debian package `chromium`)";
  Trace trace;
  trace.events = {TraceEvent::Alloc(1, 1000), TraceEvent::Alloc(2, 1000),
                  TraceEvent::Free(1),        TraceEvent::Alloc(3, 500),
                  TraceEvent::Alloc(4, 4096), TraceEvent::Free(2)};
  absl::StatusOr<PreparedTrace> prepared = PreparedTrace::Prepare(trace);
  ASSERT_TRUE(prepared.ok());
  AllocatorSpec config;
  config.policy = "tf";
  config.growth = false;
  config.memory_limit = 4096;  // id 4 cannot fit next to ids 2 and 3
  absl::StatusOr<ReplayTarget> target = CreateReplayTarget(config);
  ASSERT_TRUE(target.ok()) << target.status();
  absl::StatusOr<ReplayResult> result =
      Replay(*prepared, *target,
             {.record_placement = true, .max_timeline_samples = 100});
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->metrics.failed_allocs, 1);

  const std::string dom =
      DumpDom(chromium, RenderReplayHtml(*result, "small replay", "bfc(test)"),
              "replay");
  EXPECT_THAT(dom, HasSubstr("data-ready=\"true\""));
  EXPECT_EQ(Count(dom, "class=\"tm-series\""), 3u);  // live, in use, pool
  EXPECT_THAT(dom, HasSubstr("peak live 1.95KiB at event 1"));
  EXPECT_EQ(Count(dom, "class=\"tm-block\""), 3u);  // ids 1, 2, 3
  EXPECT_THAT(dom, HasSubstr("data-drawn=\"3\""));
  EXPECT_THAT(dom, HasSubstr("Failed allocation at event 4: id 4, 4.00KiB"));
  EXPECT_THAT(dom, HasSubstr("tm-free-chunks"));
}

TEST(ChromiumReportTest, WhatIfPageDrawsOneReservedLinePerCandidate) {
  const std::string chromium = FindChromium();
  if (chromium.empty())
    GTEST_SKIP() << "chromium is not installed (Debian package `chromium`)";
  Trace trace;
  trace.events = {TraceEvent::Alloc(1, 1000), TraceEvent::Alloc(2, 3 << 20),
                  TraceEvent::Free(1),        TraceEvent::Alloc(3, 500),
                  TraceEvent::Free(2),        TraceEvent::Free(3)};
  absl::StatusOr<PreparedTrace> prepared = PreparedTrace::Prepare(trace);
  ASSERT_TRUE(prepared.ok());
  absl::StatusOr<std::vector<WhatIfCandidate>> candidates =
      ParseWhatIfCandidates("tf; pytorch config=expandable_segments:True");
  ASSERT_TRUE(candidates.ok()) << candidates.status();
  absl::StatusOr<WhatIfResult> result = RunWhatIf(*prepared, *candidates,
                                                  {.device_memory = 2 << 20,
                                                   .measure_speed = false,
                                                   .timeline_samples = 100});
  ASSERT_TRUE(result.ok()) << result.status();

  const std::string dom =
      DumpDom(chromium, RenderWhatIfHtml(*result, "what if"), "whatif");
  EXPECT_THAT(dom, HasSubstr("data-ready=\"true\""));
  // The peak-live floor and one line per candidate.
  EXPECT_EQ(Count(dom, "class=\"tm-series\""), 3u);
  EXPECT_THAT(dom, HasSubstr("pytorch config=expandable_segments:True"));
  EXPECT_THAT(dom, HasSubstr("OOM at event 1"));  // 3 MiB > 2 MiB of memory
}

// A screenshot of a page with ratio charts: Chromium lays the static SVG out
// and paints it (a PNG as wide as the window, not blank).
TEST(ChromiumReportTest, RatioChartsRenderToAScreenshot) {
  const std::string chromium = FindChromium();
  if (chromium.empty())
    GTEST_SKIP() << "chromium is not installed (Debian package `chromium`)";
  RatioChartData chart;
  chart.value_label = "reserved / peak live";
  chart.series = {"tf", "pytorch", "tight"};
  for (int i = 0; i < 20; ++i) {
    chart.categories.push_back("trace " + std::to_string(i));
    chart.values.push_back({1.2 + i * 0.05, 1.1 + i * 0.02, 1.01});
  }
  HtmlPage page("ratios");
  page.AddRatioChart(chart);
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "ratio-screenshot";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "profile");
  ASSERT_TRUE(WriteHtmlFile((dir / "page.html").string(), page.Render()).ok());
  const std::string png = (dir / "shot.png").string();
  const std::string command =
      "cd " + dir.string() + " && timeout 120 " + chromium +
      " --headless --no-sandbox --disable-gpu --no-first-run"
      " --disable-background-networking --disable-component-update"
      " --disable-sync --hide-scrollbars --window-size=900,700"
      " --user-data-dir=" +
      (dir / "profile").string() + " --screenshot=" + png + " file://" +
      (dir / "page.html").string() + " >" + (dir / "stderr").string() + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0)
      << ReadAll((dir / "stderr").string());
  const std::string bytes = ReadAll(png);
  ASSERT_GT(bytes.size(), 24u);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
  // Width and height, big-endian in the IHDR chunk.
  const auto word = [&bytes](size_t at) {
    return (static_cast<uint32_t>(static_cast<uint8_t>(bytes[at])) << 24) |
           (static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + 1])) << 16) |
           (static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + 2])) << 8) |
           static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + 3]));
  };
  EXPECT_EQ(word(16), 900u);
  EXPECT_EQ(word(20), 700u);
  // Sixty bars of colour compress to far more than a blank page's bytes.
  EXPECT_GT(bytes.size(), 8000u);
  const std::string dom = DumpDom(chromium, page.Render(), "ratio-dom");
  EXPECT_EQ(Count(dom, "class=\"tm-bar\""), 60u);
}

TEST(ChromiumReportTest, LargePlanIsAggregated) {
  const std::string chromium = FindChromium();
  if (chromium.empty())
    GTEST_SKIP() << "chromium is not installed (Debian package `chromium`)";
  BufferSet set;
  // 20000 small buffers under one big one: most are far below a pixel.
  set.buffers.push_back(
      {.id = 0, .lower = 0, .upper = 20000, .size = 1 << 20, .offset = 0});
  for (int i = 1; i <= 20000; ++i) {
    set.buffers.push_back({.id = static_cast<uint64_t>(i),
                           .lower = i - 1,
                           .upper = i,
                           .size = 64,
                           .offset = (1 << 20) + 64 * (i % 7)});
  }
  const std::string dom =
      DumpDom(chromium, RenderPlanHtml(set, "aggregated"), "plan");
  EXPECT_THAT(dom, HasSubstr("data-ready=\"true\""));
  EXPECT_THAT(dom, HasSubstr("data-visible=\"20001\""));
  EXPECT_THAT(dom, HasSubstr("data-drawn=\"1\""));
  EXPECT_THAT(dom, HasSubstr("data-aggregated=\"20000\""));
  EXPECT_THAT(dom, HasSubstr("class=\"tm-aggregate\""));
  EXPECT_THAT(dom, HasSubstr("20001 of 20001 buffers in view"));
}

}  // namespace
}  // namespace tensormem
