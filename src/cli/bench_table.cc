#include "cli/bench_table.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tensormem/core/units.h"
#include "tensormem/report/text_table.h"

namespace tensormem::cli {
namespace {

std::string Ratio(const std::optional<double>& value) {
  return value ? absl::StrFormat("%.4f", *value) : "-";
}
std::string Ns(const std::optional<double>& value) {
  return value ? absl::StrFormat("%.1f", *value) : "-";
}

nlohmann::json Optional(const auto& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

nlohmann::json AllocatorJson(const std::vector<std::optional<double>>& ratios) {
  nlohmann::json json = nlohmann::json::object();
  for (size_t i = 0; i < ratios.size(); ++i)
    json[kBenchAllocatorNames[i]] = Optional(ratios[i]);
  return json;
}

// Each allocator's spread over some rows, in words.
template <typename Row>
std::string AllocatorLine(const std::vector<Row>& rows, std::string_view what) {
  const std::vector<Spread> spreads = AllocatorSpreads(rows);
  std::vector<std::string> parts;
  size_t count = 0;
  for (size_t a = 0; a < spreads.size(); ++a) {
    count = std::max(count, spreads[a].count);
    if (spreads[a].count > 0) {
      parts.push_back(absl::StrFormat("%s %.3f / %.3f", kBenchAllocatorNames[a],
                                      spreads[a].median, spreads[a].max));
    }
  }
  if (parts.empty()) return "";
  return absl::StrFormat("reserved / peak live on %d %s (median / worst): %s",
                         count, what, absl::StrJoin(parts, ", "));
}

// How many traces `planned` served from a plan, and its steady pool / live
// over them.
std::string PlannedLine(const std::vector<BenchRow>& rows) {
  std::vector<double> steady;
  size_t traces = 0;
  for (const BenchRow& row : rows) {
    if (row.kind != "trace") continue;
    ++traces;
    if (row.planned_steady_ratio) steady.push_back(*row.planned_steady_ratio);
  }
  if (steady.empty()) return "";
  const Spread spread = SpreadOf(steady);
  return absl::StrFormat(
      "planned served %d of %d traces from a plan (--table: why not, for "
      "the others): steady pool / live %.4f / %.4f (median / worst)",
      steady.size(), traces, spread.median, spread.max);
}

}  // namespace

const std::vector<std::string> kBenchAllocatorNames = {
    "tf", "pytorch", "pytorch + expandable segments", "tight"};

const std::vector<WhatIfCandidate>& BenchAllocators() {
  static const auto* const candidates = new std::vector<WhatIfCandidate>(
      *ParseWhatIfCandidates(kBenchAllocators));
  return *candidates;
}

Spread SpreadOf(std::vector<double> values) {
  Spread spread;
  spread.count = values.size();
  if (values.empty()) return spread;
  std::sort(values.begin(), values.end());
  spread.median = values[values.size() / 2];
  spread.max = values.back();
  return spread;
}

std::vector<std::pair<std::string, Spread>> PlannerSpreads(
    const std::vector<BenchRow>& rows) {
  std::vector<std::pair<std::string, std::vector<double>>> values;
  for (const BenchRow& row : rows) {
    for (const auto& plan : row.plan_ratios) {
      const std::string& planner = plan.first;
      auto it = std::find_if(values.begin(), values.end(),
                             [&](const auto& v) { return v.first == planner; });
      if (it == values.end())
        it = values.insert(values.end(), {planner, std::vector<double>()});
      it->second.push_back(plan.second);
    }
  }
  std::vector<std::pair<std::string, Spread>> spreads;
  for (auto& [planner, ratios] : values)
    spreads.emplace_back(planner, SpreadOf(std::move(ratios)));
  return spreads;
}

std::vector<std::string> BenchHeader() {
  std::vector<std::string> header = {"workload", "kind", "peak live"};
  for (const std::string& name : kBenchAllocatorNames)
    header.push_back(name + " / live");
  for (const char* name : {"planned steady / live", "tight min limit / live",
                           "tight ns/op", "system ns/op", "best plan / live"})
    header.push_back(name);
  return header;
}

std::vector<std::string> Cells(const BenchRow& row) {
  std::vector<std::string> cells = {row.workload, row.kind,
                                    HumanBytes(row.peak_live)};
  for (size_t a = 0; a < kBenchAllocatorNames.size(); ++a) {
    cells.push_back(
        a < row.allocator_ratios.size() ? Ratio(row.allocator_ratios[a]) : "-");
  }
  cells.push_back(row.planned_steady_ratio || row.kind != "trace"
                      ? Ratio(row.planned_steady_ratio)
                      : row.planned_no_steady_state);
  // Marks a limit a bisection found and nothing confirmed as exact.
  cells.push_back(
      Ratio(row.min_limit_ratio) +
      (row.min_limit_method.starts_with("bisection") ? " (bisection)" : ""));
  cells.push_back(Ns(row.tight_ns_per_op));
  cells.push_back(Ns(row.system_ns_per_op));
  cells.push_back(row.best_plan_ratio
                      ? absl::StrFormat("%.4f (%s)", *row.best_plan_ratio,
                                        row.best_plan_strategy)
                      : "-");
  return cells;
}

std::vector<std::string> SnapshotHeader() {
  std::vector<std::string> header = {"snapshot", "peak live", "recorded / live",
                                     "pytorch replay"};
  for (const std::string& name : kBenchAllocatorNames)
    header.push_back(name + " / live");
  return header;
}

std::vector<std::string> SnapshotCells(const SnapshotRow& row) {
  std::vector<std::string> cells = {row.name, HumanBytes(row.peak_live),
                                    Ratio(row.recorded_ratio),
                                    !row.recorded_ratio   ? "no segment events"
                                    : row.pytorch_matches ? "matches the GPU"
                                                          : "differs"};
  for (const std::optional<double>& ratio : row.allocator_ratios)
    cells.push_back(Ratio(ratio));
  return cells;
}

nlohmann::json RowJson(const BenchRow& row) {
  nlohmann::json plans = nlohmann::json::object();
  for (const auto& [planner, ratio] : row.plan_ratios) plans[planner] = ratio;
  return {{"workload", row.workload},
          {"kind", row.kind},
          {"page", row.page},
          {"peak_live_bytes", row.peak_live},
          {"reserved_over_live", AllocatorJson(row.allocator_ratios)},
          {"planned_steady_over_live", Optional(row.planned_steady_ratio)},
          {"planned_no_steady_state", row.planned_no_steady_state},
          {"tight_peak_pool_bytes", Optional(row.tight_peak_pool)},
          {"tight_failed_allocs", Optional(row.tight_failed_allocs)},
          {"min_limit_ratio", Optional(row.min_limit_ratio)},
          {"min_limit_method", row.min_limit_method},
          {"tight_ns_per_op", Optional(row.tight_ns_per_op)},
          {"system_ns_per_op", Optional(row.system_ns_per_op)},
          {"plan_over_live", plans},
          {"best_plan_ratio", Optional(row.best_plan_ratio)},
          {"best_plan_strategy", row.best_plan_strategy},
          {"skipped_strategies", row.skipped_strategies}};
}

nlohmann::json SnapshotJson(const SnapshotRow& row) {
  return {{"snapshot", row.name},
          {"peak_live_bytes", row.peak_live},
          {"recorded_over_live", Optional(row.recorded_ratio)},
          {"pytorch_matches", row.pytorch_matches},
          {"reserved_over_live", AllocatorJson(row.allocator_ratios)}};
}

std::vector<std::string> SummaryLines(
    const std::vector<BenchRow>& rows,
    const std::vector<SnapshotRow>& snapshots) {
  std::vector<std::string> lines;
  if (std::string line = AllocatorLine(rows, "traces"); !line.empty())
    lines.push_back(std::move(line));
  if (std::string line = PlannedLine(rows); !line.empty())
    lines.push_back(std::move(line));
  std::vector<double> recorded;
  size_t matching = 0;
  for (const SnapshotRow& row : snapshots) {
    if (!row.recorded_ratio) continue;
    recorded.push_back(*row.recorded_ratio);
    matching += row.pytorch_matches ? 1 : 0;
  }
  if (std::string line = AllocatorLine(snapshots, "PyTorch GPU snapshots");
      !line.empty()) {
    const Spread spread = SpreadOf(recorded);
    lines.push_back(absl::StrFormat(
        "%s; recorded by PyTorch on the GPU %.3f / %.3f (the pytorch model "
        "replays %d of %d exactly)",
        line, spread.median, spread.max, matching, recorded.size()));
  }
  std::vector<std::string> planners;
  for (const auto& [planner, spread] : PlannerSpreads(rows)) {
    planners.push_back(
        absl::StrFormat("%s %.3f / %.3f", planner, spread.median, spread.max));
  }
  if (!planners.empty()) {
    lines.push_back(
        absl::StrCat("plan / peak live on the buffer sets (median / worst): ",
                     absl::StrJoin(planners, ", ")));
  }
  return lines;
}

void PrintTable(const std::vector<BenchRow>& rows) {
  std::vector<std::vector<std::string>> cells = {BenchHeader()};
  for (const BenchRow& row : rows) cells.push_back(Cells(row));
  std::printf("%s", FormatTextTable(cells).c_str());
}

}  // namespace tensormem::cli
