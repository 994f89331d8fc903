// `tensormem report`: a self-contained HTML picture of a trace replay or of a
// plan (a buffer set with offsets); see docs/report.md.
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/commands.h"
#include "cli/replay_flags.h"
#include "nlohmann/json.hpp"
#include "tensormem/core/units.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"
#include "tensormem/report/plan_html.h"
#include "tensormem/report/replay_html.h"
#include "tensormem/trace/trace_input.h"

namespace tensormem::cli {
namespace {

constexpr std::string_view kCommand = "report";
constexpr size_t kTimelineSamples = 2000;

struct ReportFlags {
  std::string input;
  std::string html;
  std::string title;
  AllocatorFlags allocator;
  bool min_limit = false;
  bool json = false;
};

void Write(const std::string& path, const std::string& html) {
  const absl::Status written = WriteHtmlFile(path, html);
  if (!written.ok()) Fail(kCommand, 1, std::string(written.message()));
}

nlohmann::json ReportPlan(const ReportFlags& flags) {
  absl::StatusOr<BufferSet> set = ReadBufferSetCsv(flags.input);
  if (!set.ok()) Fail(kCommand, 1, std::string(set.status().message()));
  for (const Buffer& buffer : set->buffers) {
    if (!buffer.offset) {
      Fail(kCommand, 1,
           flags.input + ": buffer " + std::to_string(buffer.id) +
               " has no offset; plan it first (tensormem plan " + flags.input +
               " --out plan.csv)");
    }
  }
  const absl::Status valid = CheckPlacement(*set);
  if (!valid.ok())
    Fail(kCommand, 1, flags.input + ": " + std::string(valid.message()));
  Write(flags.html,
        RenderPlanHtml(*set, flags.title.empty() ? flags.input : flags.title));
  uint64_t height = 0;
  for (const Buffer& buffer : set->buffers)
    height = std::max(height, *buffer.offset + buffer.size);
  return {{"kind", "plan"},
          {"buffers", set->buffers.size()},
          {"total_size", height},
          {"lower_bound", PeakLiveBytes(*set)}};
}

nlohmann::json ReportTrace(const ReportFlags& flags) {
  absl::StatusOr<AllocatorSpec> config = ToAllocatorSpec(flags.allocator);
  if (!config.ok()) Fail(kCommand, 2, std::string(config.status().message()));
  const PreparedTrace trace = LoadTrace(kCommand, flags.input, config->device);
  absl::StatusOr<ReplayTarget> target = CreateReplayTarget(*config);
  if (!target.ok()) Fail(kCommand, 1, std::string(target.status().message()));
  absl::StatusOr<ReplayResult> result = Replay(
      trace, *target,
      {.record_placement = true, .max_timeline_samples = kTimelineSamples});
  if (!result.ok())
    Fail(kCommand, 1,
         flags.input + ": " + std::string(result.status().message()));
  ReplayReportExtras extras;
  if (flags.min_limit) {
    absl::StatusOr<MinimumLimit> found = MinimumLimitFor(trace, *config);
    if (!found.ok()) Fail(kCommand, 1, std::string(found.status().message()));
    extras.min_limit = *found;
  }
  const std::string description = DescribeAllocator(*config);
  Write(
      flags.html,
      RenderReplayHtml(*result, flags.title.empty() ? flags.input : flags.title,
                       description, extras));
  nlohmann::json json = ReplayMetricsToJson(result->metrics);
  json["kind"] = "trace";
  json["allocator_config"] = description;
  if (extras.min_limit) {
    json.update(MinimumLimitToJson(*extras.min_limit));
  }
  return json;
}

void Run(const ReportFlags& flags) {
  // A buffer set is drawn as a plan; every other input is replayed.
  const bool is_plan = DetectTraceFormat(flags.input) == TraceFormat::kBuffers;
  nlohmann::json json = is_plan ? ReportPlan(flags) : ReportTrace(flags);
  json["input"] = flags.input;
  json["html"] = flags.html;
  if (flags.json) {
    std::printf("%s\n", json.dump(2).c_str());
  } else if (is_plan) {
    std::printf("%s: plan of %zu buffers, total %s, lower bound %s -> %s\n",
                flags.input.c_str(), json["buffers"].get<size_t>(),
                HumanBytes(json["total_size"]).c_str(),
                HumanBytes(json["lower_bound"]).c_str(), flags.html.c_str());
  } else {
    std::printf(
        "%s: %lld events, peak live %s, peak pool %s, %lld failed allocs -> "
        "%s\n",
        flags.input.c_str(), json["events"].get<long long>(),
        HumanBytes(json["peak_live_bytes"]).c_str(),
        HumanBytes(json["peak_pool_bytes"]).c_str(),
        json["failed_allocs"].get<long long>(), flags.html.c_str());
  }
}

}  // namespace

void AddReportCommand(CLI::App& app) {
  auto flags = std::make_shared<ReportFlags>();
  CLI::App* command = app.add_subcommand(
      "report",
      "Write one self-contained HTML page: for a trace, the replay's memory "
      "timeline, placement "
      "and failed allocations; for a buffer set with offsets (.csv), the plan "
      "picture.\n"
      "Example: tensormem report data/models/resnet50.infer_b8.trace.gz --html "
      "out/resnet50.html "
      "--min-limit");
  command
      ->add_option("input", flags->input,
                   "trace (.trace[.gz]), PyTorch snapshot (.pickle), RMM "
                   "log (.csv) or buffer set with offsets (.csv)")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--html", flags->html, "where to write the page")
      ->required();
  command->add_option("--title", flags->title,
                      "page title (default: the input path)");
  AddAllocatorFlags(*command, flags->allocator);
  command->add_flag("--min-limit,!--no-min-limit", flags->min_limit,
                    "traces: also find the smallest limit without growth at "
                    "which nothing fails (default: off)");
  command->add_flag("--json", flags->json,
                    "print one JSON object summarising the page");
  command->callback([flags] { Run(*flags); });
}

}  // namespace tensormem::cli
