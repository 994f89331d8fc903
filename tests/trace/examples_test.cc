// The usage examples of the trace and report layers' public headers, compiled
// and run. Each test opens with its header's example as the header writes it
// (keep the two in sync; repository paths are taken from the source tree and
// files are written to a temporary directory), then checks what the example
// promises.
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "repo_path.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/core/units.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/report/html_page.h"
#include "tensormem/report/plan_html.h"
#include "tensormem/report/replay_html.h"
#include "tensormem/trace/replay.h"
#include "tensormem/trace/replay_allocator.h"
#include "tensormem/trace/trace_input.h"
#include "tensormem/trace/trace_io.h"
#include "tensormem/trace/trace_summary.h"
#include "tensormem/trace/whatif.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

absl::Status TraceIoExample() {
  const std::string vit = RepoPath("data/models/vit_b_16.infer_b8.trace.gz");
  absl::StatusOr<Trace> trace = ReadTrace(vit);
  if (!trace.ok()) return trace.status();  // "bert.trace.gz:12: free of ..."

  TM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader,
                      TraceReader::Open(vit));
  TraceEvent event;
  size_t streamed = 0;
  while (true) {
    TM_ASSIGN_OR_RETURN(bool more, reader->Next(event));
    if (!more) break;
    ++streamed;
  }
  EXPECT_GT(trace->events.size(), 0u);
  EXPECT_EQ(streamed, trace->events.size());
  return absl::OkStatus();
}

TEST(TraceExamples, TraceIo) { EXPECT_EQ(TraceIoExample(), absl::OkStatus()); }

TEST(TraceExamples, TraceIoErrorsNameTheLine) {
  absl::StatusOr<Trace> trace = ParseTrace("a 1 8\nf 2\n", "bad.trace");
  EXPECT_THAT(std::string(trace.status().message()),
              StartsWith("bad.trace:2:"));
}

absl::Status TraceInputExample() {
  const std::string snapshot =
      RepoPath("tests/data/trace/snapshot_protocol4.pickle");
  TM_ASSIGN_OR_RETURN(TraceInput input, ReadTraceInput(snapshot));
  // input.format == TraceFormat::kPytorch; input.trace holds the events.
  EXPECT_EQ(input.format, TraceFormat::kPytorch);
  EXPECT_GT(input.trace.events.size(), 0u);
  return absl::OkStatus();
}

TEST(TraceExamples, TraceInput) {
  EXPECT_EQ(TraceInputExample(), absl::OkStatus());
}

// Replay (replay.h), the trace summary that agrees with it (trace_summary.h)
// and the replay report (replay_html.h).
absl::Status ReplayExample() {
  TM_ASSIGN_OR_RETURN(
      Trace trace,
      ReadTrace(RepoPath("data/models/vit_b_16.infer_b8.trace.gz")));
  AllocatorSpec spec;  // the default: tight policy, simulated memory
  TM_ASSIGN_OR_RETURN(PreparedTrace prepared, PreparedTrace::Prepare(trace));
  TM_ASSIGN_OR_RETURN(ReplayTarget target, CreateReplayTarget(spec));
  TM_ASSIGN_OR_RETURN(ReplayResult result, Replay(prepared, target, {}));
  const std::string json = ReplayMetricsToJson(result.metrics).dump();

  TM_ASSIGN_OR_RETURN(TraceSummary summary, SummarizeTrace(trace));
  EXPECT_EQ(summary.peak_live_bytes, result.metrics.peak_live_bytes);
  EXPECT_EQ(result.metrics.failed_allocs, 0);
  EXPECT_EQ(result.metrics.peak_live_bytes, prepared.peak_live_bytes());
  EXPECT_THAT(json, HasSubstr("\"peak_live_bytes\""));

  ReplayOptions options{.record_placement = true, .max_timeline_samples = 2000};
  TM_ASSIGN_OR_RETURN(ReplayTarget fresh, CreateReplayTarget(spec));
  TM_ASSIGN_OR_RETURN(ReplayResult placed, Replay(prepared, fresh, options));
  std::string html =
      RenderReplayHtml(placed, "bert.trace", "bfc(simulated, growth)");

  EXPECT_FALSE(placed.timeline.empty());
  EXPECT_THAT(html, HasSubstr("bert.trace"));
  return absl::OkStatus();
}

TEST(TraceExamples, ReplayAndItsReport) {
  EXPECT_EQ(ReplayExample(), absl::OkStatus());
}

absl::Status WhatIfExample() {
  TM_ASSIGN_OR_RETURN(
      Trace trace,
      ReadTrace(RepoPath("data/models/resnet18.infer_b8.trace.gz")));
  TM_ASSIGN_OR_RETURN(PreparedTrace prepared, PreparedTrace::Prepare(trace));
  TM_ASSIGN_OR_RETURN(std::vector<WhatIfCandidate> candidates,
                      ParseWhatIfCandidates("tf; pytorch"));
  WhatIfOptions options;
  options.device_memory = 80 * kGiB;
  TM_ASSIGN_OR_RETURN(WhatIfResult result,
                      RunWhatIf(prepared, candidates, options));
  const std::string json = WhatIfToJson(result).dump(2);

  EXPECT_EQ(candidates.size(), 2u);
  EXPECT_THAT(json, HasSubstr("pytorch"));
  return absl::OkStatus();
}

TEST(TraceExamples, WhatIf) { EXPECT_EQ(WhatIfExample(), absl::OkStatus()); }

absl::Status PlanHtmlExample() {
  const std::string plan_csv =
      RepoPath("tests/data/trace/buffers_half_open.csv");
  const std::string plan_html = ::testing::TempDir() + "/plan.html";
  absl::StatusOr<BufferSet> placed = ReadBufferSetCsv(plan_csv);
  TM_RETURN_IF_ERROR(placed.status());
  std::string html = RenderPlanHtml(*placed, "resnet50, greedy by size");
  TM_RETURN_IF_ERROR(WriteHtmlFile(plan_html, html));

  EXPECT_THAT(html, HasSubstr("resnet50, greedy by size"));
  EXPECT_THAT(html, HasSubstr("</html>"));
  return absl::OkStatus();
}

TEST(ReportExamples, PlanHtml) {
  EXPECT_EQ(PlanHtmlExample(), absl::OkStatus());
}

TEST(ReportExamples, HtmlPage) {
  BufferSet placed;
  placed.buffers = {{.id = 7, .lower = 0, .upper = 2, .size = 64, .offset = 0}};
  HtmlPage page("resnet50 plan");
  page.AddHeading("Summary");
  page.AddTable({"metric", "value"}, {{"peak live", "12.00MiB"}});
  page.AddPlacementChart(placed);  // a BufferSet with offsets
  std::string html = page.Render();

  EXPECT_THAT(html, HasSubstr("resnet50 plan"));
  EXPECT_THAT(html, HasSubstr("12.00MiB"));
}

}  // namespace
}  // namespace tensormem
