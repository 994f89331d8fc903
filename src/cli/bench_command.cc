// `tensormem bench`: every workload of a corpus through the allocators and
// planners, one table, one HTML report linking a picture per workload.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "cli/bench_page.h"
#include "cli/bench_policies.h"
#include "cli/bench_snapshots.h"
#include "cli/bench_table.h"
#include "cli/commands.h"
#include "cli/replay_flags.h"
#include "nlohmann/json.hpp"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/core/units.h"
#include "tensormem/plan/strategy_registry.h"
#include "tensormem/plan/usage_record.h"
#include "tensormem/report/html_page.h"
#include "tensormem/report/plan_html.h"
#include "tensormem/report/replay_html.h"
#include "tensormem/trace/whatif.h"

namespace tensormem::cli {
namespace {

namespace fs = std::filesystem;
constexpr std::string_view kCommand = "bench";
constexpr double kPlanSecondsLimit = 2;
// Strategies whose own estimate exceeds this are skipped, and strategies
// without an estimate only run on sets up to max_unestimated_buffers, so the
// whole corpus stays a couple of minutes.
constexpr double kStrategyEstimateLimit = 5;

struct BenchFlags {
  std::vector<std::string> corpus = {"data"};  // folders, searched in turn
  std::string out = "out";
  bool json = false;
  bool min_limit = true;
  std::vector<std::string> strategies = {"greedy_by_size", "best_fit_multi"};
  std::string snapshots;  // a folder of PyTorch snapshots (.pickle)
  bool table = false;     // print every row, not only the summary
  std::string policies;   // set: only the policy table, over traces
  size_t max_unestimated_buffers = 10000;
};

struct Workload {
  std::string name;  // path under its corpus folder, without extension
  std::string path;
  bool is_trace = false;
};

void AddWorkloads(const std::string& corpus, std::vector<Workload>& workloads) {
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(corpus, error);
       !error && it != fs::recursive_directory_iterator();
       it.increment(error)) {
    if (!it->is_regular_file()) continue;
    const std::string path = it->path().string();
    const std::string relative = fs::relative(it->path(), corpus).string();
    for (const std::string_view suffix : {".trace.gz", ".trace", ".csv"}) {
      if (!absl::EndsWith(path,
                          absl::string_view(suffix.data(), suffix.size())))
        continue;
      workloads.push_back({relative.substr(0, relative.size() - suffix.size()),
                           path, suffix != ".csv"});
      break;
    }
  }
  if (error) Fail(kCommand, 1, corpus + ": " + error.message());
}

// Every workload under the corpus folders, by path; names (a page each) must
// differ between files.
std::vector<Workload> FindWorkloads(const std::vector<std::string>& corpus) {
  std::vector<Workload> workloads;
  for (const std::string& folder : corpus) AddWorkloads(folder, workloads);
  std::sort(
      workloads.begin(), workloads.end(),
      [](const Workload& a, const Workload& b) { return a.path < b.path; });
  // A folder given twice adds nothing.
  workloads.erase(std::unique(workloads.begin(), workloads.end(),
                              [](const Workload& a, const Workload& b) {
                                return a.path == b.path;
                              }),
                  workloads.end());
  absl::flat_hash_map<std::string, std::string> paths_by_name;
  for (const Workload& workload : workloads) {
    const auto [it, added] =
        paths_by_name.try_emplace(workload.name, workload.path);
    if (!added) {
      Fail(kCommand, 2,
           "--corpus: " + it->second + " and " + workload.path +
               " are both named '" + workload.name + "'");
    }
  }
  return workloads;
}

std::string CorpusNames(const std::vector<std::string>& corpus) {
  return absl::StrJoin(corpus, ", ");
}

std::string PageName(const Workload& workload) {
  return absl::StrReplaceAll(workload.name, {{"/", "_"}}) + ".html";
}

BenchRow NewRow(const Workload& workload, std::string kind) {
  BenchRow row;
  row.workload = workload.name;
  row.kind = std::move(kind);
  row.page = PageName(workload);
  return row;
}

template <typename T>
T Check(absl::StatusOr<T> value, const std::string& context) {
  if (!value.ok())
    Fail(kCommand, 1, context + ": " + std::string(value.status().message()));
  return *std::move(value);
}

// Every compared allocator's peak reserved / peak live, growing on demand.
std::vector<std::optional<double>> AllocatorRatios(const PreparedTrace& trace,
                                                   const std::string& path) {
  std::vector<std::optional<double>> ratios;
  for (const WhatIfCandidate& candidate : BenchAllocators()) {
    ReplayTarget target = Check(CreateReplayTarget(candidate.spec), path);
    const ReplayResult result = Check(Replay(trace, target, {}), path);
    ratios.push_back(result.metrics.fragmentation);
  }
  return ratios;
}

BenchRow BenchTrace(const Workload& workload, const BenchFlags& flags) {
  const PreparedTrace trace = LoadTrace(kCommand, workload.path);
  const AllocatorSpec& tight = BenchAllocators()[kMeasuredAllocator].spec;
  AllocatorSpec system;
  system.kind = "system";
  BenchRow row = NewRow(workload, "trace");
  row.allocator_ratios = AllocatorRatios(trace, workload.path);
  row.planned_steady_ratio =
      PlannedSteadyRatio(trace, workload.path, row.planned_no_steady_state);
  row.tight_ns_per_op = MeasureSpeed(kCommand, trace, tight).ns_per_op;
  row.system_ns_per_op = MeasureSpeed(kCommand, trace, system).ns_per_op;
  ReplayTarget target = Check(CreateReplayTarget(tight), workload.path);
  const ReplayResult result =
      Check(Replay(trace, target,
                   {.record_placement = true, .max_timeline_samples = 2000}),
            workload.path);
  row.peak_live = result.metrics.peak_live_bytes;
  row.tight_peak_pool = result.metrics.peak_pool_bytes;
  row.tight_failed_allocs = result.metrics.failed_allocs;
  ReplayReportExtras extras;
  if (flags.min_limit) {
    extras.min_limit = Check(MinimumLimitFor(trace, tight), workload.path);
    row.min_limit_ratio = extras.min_limit->ratio;
    row.min_limit_method = MinLimitMethodName(extras.min_limit->method);
  }
  const absl::Status written =
      WriteHtmlFile((fs::path(flags.out) / row.page).string(),
                    RenderReplayHtml(result, workload.name,
                                     DescribeAllocator(tight), extras));
  if (!written.ok()) Fail(kCommand, 1, std::string(written.message()));
  return row;
}

std::vector<const StrategyInfo*> ChosenStrategies(const BenchFlags& flags) {
  std::vector<const StrategyInfo*> chosen;
  for (const StrategyInfo* strategy : ListStrategies(PlanMode::kOffsets)) {
    const bool listed =
        std::find(flags.strategies.begin(), flags.strategies.end(),
                  strategy->name) != flags.strategies.end();
    const bool all = std::find(flags.strategies.begin(), flags.strategies.end(),
                               "all") != flags.strategies.end();
    if (listed || (all && strategy->in_all)) chosen.push_back(strategy);
  }
  return chosen;
}

std::optional<BenchRow> BenchBufferSet(const Workload& workload,
                                       const BenchFlags& flags) {
  absl::StatusOr<BufferSet> set = ReadBufferSetCsv(workload.path);
  if (!set.ok()) {
    std::fprintf(stderr, "tensormem bench: skipping %s: %s\n",
                 workload.path.c_str(),
                 std::string(set.status().message()).c_str());
    return std::nullopt;
  }
  BenchRow row = NewRow(workload, "buffer set");
  row.peak_live = PeakLiveBytes(*set);
  absl::StatusOr<std::vector<UsageRecord<>>> records = ToUsageRecords(*set);
  if (!records.ok())
    Fail(kCommand, 1,
         workload.path + ": " + std::string(records.status().message()));
  const ProblemSize size = MeasureProblem(*records, PlanMode::kOffsets);
  std::optional<PlanResult> best;
  for (const StrategyInfo* strategy : ChosenStrategies(flags)) {
    const bool too_slow =
        strategy->estimate_seconds
            ? EstimateSeconds(*strategy, size) > kStrategyEstimateLimit
            : set->buffers.size() > flags.max_unestimated_buffers;
    if (too_slow) {
      row.skipped_strategies.push_back(strategy->name);
      continue;
    }
    PlanOptions options;
    options.time_limit_seconds = kPlanSecondsLimit;
    absl::StatusOr<PlanResult> plan =
        RunStrategy(strategy->name, *set, PlanMode::kOffsets, options);
    if (!plan.ok()) {
      row.skipped_strategies.push_back(strategy->name);
      continue;
    }
    row.plan_ratios.emplace_back(strategy->name, plan->Ratio());
    if (!best || plan->total_size < best->total_size) best = *std::move(plan);
  }
  if (!best) return row;
  row.best_plan_ratio = best->Ratio();
  row.best_plan_strategy = best->strategy;
  BufferSet placed = *set;
  for (size_t i = 0; i < placed.buffers.size(); ++i)
    placed.buffers[i].offset = best->offsets[i];
  const absl::Status written = WriteHtmlFile(
      (fs::path(flags.out) / row.page).string(),
      RenderPlanHtml(placed, workload.name + ", " + best->strategy));
  if (!written.ok()) Fail(kCommand, 1, std::string(written.message()));
  return row;
}

void RunPolicies(const BenchFlags& flags) {
  absl::StatusOr<std::vector<WhatIfCandidate>> choices =
      ParseWhatIfCandidates(flags.policies);
  if (!choices.ok()) {
    Fail(kCommand, 2, "--policies: " + std::string(choices.status().message()));
  }
  std::vector<std::string> paths, names;
  for (const Workload& workload : FindWorkloads(flags.corpus)) {
    if (!workload.is_trace) continue;
    paths.push_back(workload.path);
    names.push_back(workload.name);
  }
  if (paths.empty())
    Fail(kCommand, 1, CorpusNames(flags.corpus) + ": no traces found");
  RunPolicyBench(paths, names, *choices, flags.json);
}

void Run(const BenchFlags& flags) {
  for (const std::string& folder : flags.corpus) {
    if (!fs::is_directory(folder))
      Fail(kCommand, 2, "--corpus " + folder + ": not a directory");
  }
  if (!flags.policies.empty()) return RunPolicies(flags);
  std::error_code error;
  fs::create_directories(flags.out, error);
  if (error) Fail(kCommand, 1, flags.out + ": " + error.message());
  const std::vector<Workload> workloads = FindWorkloads(flags.corpus);
  if (workloads.empty()) {
    Fail(kCommand, 1,
         CorpusNames(flags.corpus) +
             ": no .trace, .trace.gz or .csv workloads found");
  }
  const bool show_progress = isatty(STDERR_FILENO) && !flags.json;
  std::vector<BenchRow> rows;
  for (size_t i = 0; i < workloads.size(); ++i) {
    if (show_progress) {
      std::fprintf(stderr, "\r[%zu/%zu] %-60s", i + 1, workloads.size(),
                   workloads[i].name.c_str());
    }
    if (workloads[i].is_trace) {
      rows.push_back(BenchTrace(workloads[i], flags));
    } else if (std::optional<BenchRow> row =
                   BenchBufferSet(workloads[i], flags)) {
      rows.push_back(*std::move(row));
    }
  }
  if (show_progress) std::fprintf(stderr, "\r%80s\r", "");

  std::vector<SnapshotRow> snapshots;
  if (!flags.snapshots.empty()) snapshots = BenchSnapshots(flags.snapshots);
  const std::string report = (fs::path(flags.out) / "report.html").string();
  const absl::Status written = WriteHtmlFile(
      report, RenderBenchPage(CorpusNames(flags.corpus), rows, snapshots));
  if (!written.ok()) Fail(kCommand, 1, std::string(written.message()));
  const std::vector<std::string> summary = SummaryLines(rows, snapshots);
  if (flags.json) {
    nlohmann::json json = {{"corpus", CorpusNames(flags.corpus)},
                           {"report", report},
                           {"summary", summary},
                           {"workloads", nlohmann::json::array()},
                           {"snapshots", nlohmann::json::array()}};
    for (const BenchRow& row : rows) json["workloads"].push_back(RowJson(row));
    for (const SnapshotRow& row : snapshots)
      json["snapshots"].push_back(SnapshotJson(row));
    std::printf("%s\n", json.dump(2).c_str());
    return;
  }
  if (flags.table) PrintTable(rows);
  std::printf("tensormem bench: %zu workloads under %s", rows.size(),
              CorpusNames(flags.corpus).c_str());
  if (!flags.snapshots.empty())
    std::printf(", %zu snapshots under %s", snapshots.size(),
                flags.snapshots.c_str());
  std::printf("\n");
  for (const std::string& line : summary) std::printf("%s\n", line.c_str());
  std::printf("report: %s (every row: --table or --json)\n", report.c_str());
}

// The registry's policy names, for --help.
std::string PolicyNames() {
  std::string names;
  for (const PolicyInfo& policy : Policies()) {
    names += (names.empty() ? "" : ", ") + std::string(policy.name);
  }
  return names;
}

}  // namespace

void AddBenchCommand(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* command =
      app.add_subcommand("bench",
                         "Run every workload of a corpus (traces: "
                         ".trace/.trace.gz; buffer sets: .csv) through "
                         "TensorFlow's, PyTorch's and tensormem's allocators "
                         "(tf, pytorch, pytorch with expandable segments, "
                         "tight; planned's steady state) and the planners, "
                         "and PyTorch snapshots "
                         "(--snapshots) beside what their GPU reserved; print "
                         "a summary and write OUT/report.html (charts, then "
                         "every workload with its picture).\n"
                         "Example: tensormem bench --corpus data/models/loops "
                         "--out out");
  command->add_option(
      "--corpus", flags->corpus,
      "directory searched recursively; repeat to add folders (default: data)");
  command->add_option("--out", flags->out,
                      "directory for report.html and pictures (default: out)");
  command->add_flag("--min-limit,!--no-min-limit", flags->min_limit,
                    "find each trace's minimum no-growth limit (default: on)");
  command
      ->add_option("--strategy", flags->strategies,
                   "offset planners for buffer sets, separated by ',' "
                   "(default: greedy_by_size,best_fit_multi; 'all': every "
                   "strategy `plan --strategy all` runs; names may be added to "
                   "it, e.g. all,optimal)")
      ->delimiter(',');
  AddFormerName(*command, "--strategies", flags->strategies)->delimiter(',');
  command->add_option(
      "--max-unestimated-buffers", flags->max_unestimated_buffers,
      "largest set a strategy without a time estimate runs on (default 10000)");
  command->add_option(
      "--policies", flags->policies,
      "instead: a table of allocators over the corpus's traces (min limit / "
      "peak live, pool / peak live with growth, ns/op; planned: the steady "
      "pool / live once a plan serves). Candidates as in whatif, separated "
      "by ';', e.g. \"tf; pytorch config=expandable_segments:True\", or "
      "'all' (policies: " +
          PolicyNames() + ", and pytorch with expandable segments)");
  command
      ->add_option(
          "--snapshots", flags->snapshots,
          "also every PyTorch snapshot (.pickle, .pickle.gz) in this folder: "
          "what its GPU reserved and each allocator replayed")
      ->check(CLI::ExistingDirectory);
  command->add_flag("--table", flags->table,
                    "print every workload's row before the summary");
  command->add_flag("--json", flags->json, "print one JSON object");
  command->callback([flags] {
    for (const std::string& name : flags->strategies) {
      if (name != "all" && FindStrategy(name) == nullptr) {
        Fail(kCommand, 2,
             "unknown strategy '" + name + "' (see tensormem plan --help)");
      }
    }
    Run(*flags);
  });
}

}  // namespace tensormem::cli
