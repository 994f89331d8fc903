#include "cli/bench_policies.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/replay_flags.h"
#include "nlohmann/json.hpp"
#include "tensormem/trace/replay_allocator.h"

namespace tensormem::cli {
namespace {

constexpr std::string_view kCommand = "bench";

struct Cell {
  double pool_ratio = 0;       // peak pool / peak live, with growth
  double min_limit_ratio = 0;  // smallest no-growth limit / peak live
  double ns_per_op = 0;        // one pass from an empty allocator
  double warm_ns_per_op = 0;   // later passes into one allocator
  int64_t failed_allocs = 0;   // with growth, at the default limit
  // Steady pool / steady live, when a plan served at the end (planned), or
  // why none did.
  std::optional<double> steady_ratio;
  std::string no_steady_state;
};

// The memory figures of one policy on one trace (speeds: MeasureSpeeds).
Cell MeasureMemory(const PreparedTrace& trace, const AllocatorSpec& spec,
                   const std::string& path) {
  Cell cell;
  absl::StatusOr<ReplayTarget> target = CreateReplayTarget(spec);
  if (!target.ok()) Fail(kCommand, 1, std::string(target.status().message()));
  absl::StatusOr<ReplayResult> result = Replay(trace, *target, {});
  if (!result.ok())
    Fail(kCommand, 1, path + ": " + std::string(result.status().message()));
  const ReplayMetrics& metrics = result->metrics;
  cell.pool_ratio = metrics.fragmentation;
  cell.failed_allocs = metrics.failed_allocs;
  cell.steady_ratio = metrics.steady_ratio();
  cell.no_steady_state = metrics.NoSteadyStateReason();
  absl::StatusOr<MinimumLimit> limit = MinimumLimitFor(trace, spec);
  if (!limit.ok())
    Fail(kCommand, 1, path + ": " + std::string(limit.status().message()));
  cell.min_limit_ratio = limit->ratio;
  return cell;
}

// Times every policy on the trace in interleaved rounds and keeps each
// one's fastest: a burst of load on a shared machine then slows one round of
// every policy alike instead of all of one policy's runs.
void MeasureSpeeds(const PreparedTrace& trace,
                   const std::vector<WhatIfCandidate>& choices,
                   std::vector<Cell>& cells) {
  constexpr int kRounds = 3;
  for (int round = 0; round < kRounds; ++round) {
    for (size_t i = 0; i < choices.size(); ++i) {
      const double cold =
          MeasureSpeed(kCommand, trace, choices[i].spec).ns_per_op;
      const double warm =
          MeasureWarmSpeed(kCommand, trace, choices[i].spec).ns_per_op;
      Cell& cell = cells[i];
      cell.ns_per_op = round == 0 ? cold : std::min(cell.ns_per_op, cold);
      cell.warm_ns_per_op =
          round == 0 ? warm : std::min(cell.warm_ns_per_op, warm);
    }
  }
}

}  // namespace

std::optional<double> PlannedSteadyRatio(const PreparedTrace& trace,
                                         const std::string& path,
                                         std::string& reason) {
  static const WhatIfCandidate planned =
      *ParseWhatIfCandidate("planned config=planning:inline");
  absl::StatusOr<ReplayTarget> target = CreateReplayTarget(planned.spec);
  if (!target.ok()) Fail(kCommand, 1, std::string(target.status().message()));
  absl::StatusOr<ReplayResult> result = Replay(trace, *target, {});
  if (!result.ok())
    Fail(kCommand, 1, path + ": " + std::string(result.status().message()));
  reason = result->metrics.NoSteadyStateReason();
  return result->metrics.steady_ratio();
}

void RunPolicyBench(const std::vector<std::string>& trace_paths,
                    const std::vector<std::string>& names,
                    const std::vector<WhatIfCandidate>& choices, bool json) {
  nlohmann::json rows = nlohmann::json::array();
  std::string table = "| trace | peak live |";
  std::string rule = "|---|---:|";
  for (const WhatIfCandidate& choice : choices) {
    absl::StrAppend(&table, " ", choice.label,
                    ": min limit / live, pool / live, ns/op (first pass / "
                    "later) |");
    rule += "---|";
  }
  table += " lowest min limit |\n" + rule + "---|\n";
  for (size_t t = 0; t < trace_paths.size(); ++t) {
    const PreparedTrace trace = LoadTrace(kCommand, trace_paths[t]);
    nlohmann::json row = {{"trace", names[t]},
                          {"peak_live_bytes", trace.peak_live_bytes()},
                          {"policies", nlohmann::json::object()}};
    absl::StrAppend(&table, "| ", names[t], " | ",
                    HumanBytes(trace.peak_live_bytes()), " |");
    std::vector<Cell> cells;
    for (const WhatIfCandidate& choice : choices)
      cells.push_back(MeasureMemory(trace, choice.spec, trace_paths[t]));
    MeasureSpeeds(trace, choices, cells);
    std::string winner;
    double best = 0;
    for (size_t i = 0; i < choices.size(); ++i) {
      const WhatIfCandidate& choice = choices[i];
      const Cell& cell = cells[i];
      row["policies"][choice.label] = {
          {"pool_over_live", cell.pool_ratio},
          {"min_limit_over_live", cell.min_limit_ratio},
          {"ns_per_op", cell.ns_per_op},
          {"warm_ns_per_op", cell.warm_ns_per_op},
          {"failed_allocs", cell.failed_allocs}};
      if (cell.steady_ratio) {
        row["policies"][choice.label]["steady_pool_over_live"] =
            *cell.steady_ratio;
      }
      if (!cell.no_steady_state.empty())
        row["policies"][choice.label]["no_steady_state"] = cell.no_steady_state;
      absl::StrAppend(&table,
                      absl::StrFormat(" %.3f, %.3f, %.0f / %.0f",
                                      cell.min_limit_ratio, cell.pool_ratio,
                                      cell.ns_per_op, cell.warm_ns_per_op));
      if (cell.steady_ratio)
        absl::StrAppend(&table,
                        absl::StrFormat(" (steady %.3f)", *cell.steady_ratio));
      if (!cell.no_steady_state.empty())
        absl::StrAppend(&table, " (", cell.no_steady_state, ")");
      table += " |";
      if (winner.empty() || cell.min_limit_ratio < best) {
        winner = choice.label;
        best = cell.min_limit_ratio;
      }
    }
    absl::StrAppend(&table, " ", winner, " |\n");
    rows.push_back(std::move(row));
  }
  if (json) {
    std::printf("%s\n", nlohmann::json{{"traces", rows}}.dump(2).c_str());
  } else {
    std::printf("%s", table.c_str());
  }
}

}  // namespace tensormem::cli
