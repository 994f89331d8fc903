// The result table of `tensormem bench`: one row per workload (and one per
// PyTorch snapshot), printed as text, HTML and JSON, with a median/max
// summary of each ratio.
#ifndef TENSORMEM_CLI_BENCH_TABLE_H_
#define TENSORMEM_CLI_BENCH_TABLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"
#include "tensormem/trace/whatif.h"

namespace tensormem::cli {

// The allocators every trace and snapshot goes through, as what-if
// candidates, and their short names in tables and charts (same order).
inline constexpr std::string_view kBenchAllocators =
    "tf; pytorch; pytorch config=expandable_segments:True; tight";
extern const std::vector<std::string> kBenchAllocatorNames;
// kBenchAllocators parsed once.
const std::vector<WhatIfCandidate>& BenchAllocators();
// The one whose picture, minimum limit and speed are measured (the default).
inline constexpr size_t kMeasuredAllocator = 3;

struct BenchRow {
  std::string workload;
  std::string kind;
  std::string page;  // relative to the out directory
  uint64_t peak_live = 0;
  // Traces: peak reserved / peak live per kBenchAllocators entry (growth on).
  std::vector<std::optional<double>> allocator_ratios;
  std::optional<uint64_t> tight_peak_pool;
  std::optional<int64_t> tight_failed_allocs;
  std::optional<double> min_limit_ratio, tight_ns_per_op, system_ns_per_op;
  std::string min_limit_method;  // MinLimitMethodName, when searched
  // Traces: `planned` from the iteration its plan took over (steady pool /
  // steady live), or why no plan served (ReplayMetrics::NoSteadyStateReason).
  std::optional<double> planned_steady_ratio;
  std::string planned_no_steady_state;
  // Buffer sets: each planner's arena / peak live (the lower bound).
  std::vector<std::pair<std::string, double>> plan_ratios;
  std::optional<double> best_plan_ratio;
  std::string best_plan_strategy;
  std::vector<std::string> skipped_strategies;
};

// A PyTorch snapshot: what its GPU reserved, and each allocator replayed.
struct SnapshotRow {
  std::string name;
  uint64_t peak_live = 0;
  std::optional<double> recorded_ratio;  // unset: no segment events
  bool pytorch_matches = false;          // the as-run replay matched
  std::vector<std::optional<double>> allocator_ratios;
};

// Column names, and one row's cells in the same order.
std::vector<std::string> BenchHeader();
std::vector<std::string> Cells(const BenchRow& row);
std::vector<std::string> SnapshotHeader();
std::vector<std::string> SnapshotCells(const SnapshotRow& row);

nlohmann::json RowJson(const BenchRow& row);
nlohmann::json SnapshotJson(const SnapshotRow& row);
// Aligned text table on stdout.
void PrintTable(const std::vector<BenchRow>& rows);
// The story in a few lines: median and worst of each allocator's reserved /
// peak live over the traces and the snapshots, and of each planner's
// arena / peak live over the buffer sets.
std::vector<std::string> SummaryLines(
    const std::vector<BenchRow>& rows,
    const std::vector<SnapshotRow>& snapshots);

// Median and maximum of some values.
struct Spread {
  size_t count = 0;
  double median = 0, max = 0;
};
Spread SpreadOf(std::vector<double> values);
// Each compared allocator's spread over the rows' allocator_ratios (trace
// rows or snapshot rows), in kBenchAllocatorNames order.
template <typename Row>
std::vector<Spread> AllocatorSpreads(const std::vector<Row>& rows) {
  std::vector<Spread> spreads;
  for (size_t a = 0; a < kBenchAllocatorNames.size(); ++a) {
    std::vector<double> values;
    for (const Row& row : rows) {
      if (a < row.allocator_ratios.size() && row.allocator_ratios[a])
        values.push_back(*row.allocator_ratios[a]);
    }
    spreads.push_back(SpreadOf(std::move(values)));
  }
  return spreads;
}
// Each planner's spread over the rows that ran it, in first-seen order.
std::vector<std::pair<std::string, Spread>> PlannerSpreads(
    const std::vector<BenchRow>& rows);

}  // namespace tensormem::cli

#endif  // TENSORMEM_CLI_BENCH_TABLE_H_
