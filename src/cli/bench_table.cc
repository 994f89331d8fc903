#include "cli/bench_table.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_format.h"
#include "tensormem/core/units.h"

namespace tensormem::cli {
namespace {

std::string Ratio(const std::optional<double>& value) {
  return value ? absl::StrFormat("%.4f", *value) : "-";
}
std::string Ns(const std::optional<double>& value) {
  return value ? absl::StrFormat("%.1f", *value) : "-";
}

// Median and maximum of one column over the rows that have it.
struct Spread {
  size_t count = 0;
  double median = 0, max = 0;
};
Spread SpreadOf(const std::vector<BenchRow>& rows,
                std::optional<double> BenchRow::*column) {
  std::vector<double> values;
  for (const BenchRow& row : rows) {
    if (row.*column) values.push_back(*(row.*column));
  }
  Spread spread;
  spread.count = values.size();
  if (values.empty()) return spread;
  std::sort(values.begin(), values.end());
  spread.median = values[values.size() / 2];
  spread.max = values.back();
  return spread;
}

}  // namespace

std::vector<std::string> Cells(const BenchRow& row) {
  return {
      row.workload, row.kind, HumanBytes(row.peak_live),
      row.bfc_peak_pool ? HumanBytes(*row.bfc_peak_pool) : "-",
      Ratio(row.bfc_fragmentation),
      // Marks a limit a bisection found and nothing confirmed as exact.
      Ratio(row.min_limit_ratio) +
          (row.min_limit_method.starts_with("bisection") ? " (bisection)" : ""),
      Ns(row.bfc_ns_per_op), Ns(row.system_ns_per_op),
      row.best_plan_ratio ? absl::StrFormat("%.4f (%s)", *row.best_plan_ratio,
                                            row.best_plan_strategy)
                          : "-"};
}

const std::vector<std::string> kHeader = {
    "workload",         "kind",          "peak live",
    "TF-BFC peak pool", "BFC pool/live", "min limit/live",
    "BFC ns/op",        "system ns/op",  "best plan/live"};

nlohmann::json RowJson(const BenchRow& row) {
  auto optional = [](const auto& value) {
    return value ? nlohmann::json(*value) : nlohmann::json();
  };
  return {{"workload", row.workload},
          {"kind", row.kind},
          {"page", row.page},
          {"peak_live_bytes", row.peak_live},
          {"bfc_peak_pool_bytes", optional(row.bfc_peak_pool)},
          {"bfc_fragmentation", optional(row.bfc_fragmentation)},
          {"bfc_failed_allocs", optional(row.bfc_failed_allocs)},
          {"min_limit_ratio", optional(row.min_limit_ratio)},
          {"min_limit_method", row.min_limit_method},
          {"bfc_ns_per_op", optional(row.bfc_ns_per_op)},
          {"system_ns_per_op", optional(row.system_ns_per_op)},
          {"best_plan_ratio", optional(row.best_plan_ratio)},
          {"best_plan_strategy", row.best_plan_strategy},
          {"skipped_strategies", row.skipped_strategies}};
}

std::vector<std::string> SummaryLines(const std::vector<BenchRow>& rows) {
  const std::pair<const char*, std::optional<double> BenchRow::*> columns[] = {
      {"TF-BFC peak pool / peak live", &BenchRow::bfc_fragmentation},
      {"min no-growth limit / peak live", &BenchRow::min_limit_ratio},
      {"best plan / peak live", &BenchRow::best_plan_ratio}};
  std::vector<std::string> lines;
  for (const auto& [name, column] : columns) {
    const Spread spread = SpreadOf(rows, column);
    if (spread.count == 0) continue;
    lines.push_back(
        absl::StrFormat("%s over %d workloads: median %.4f, max %.4f", name,
                        spread.count, spread.median, spread.max));
  }
  return lines;
}

void PrintTable(const std::vector<BenchRow>& rows) {
  std::vector<std::vector<std::string>> cells = {kHeader};
  for (const BenchRow& row : rows) cells.push_back(Cells(row));
  std::vector<size_t> widths(kHeader.size(), 0);
  for (const auto& line : cells) {
    for (size_t c = 0; c < line.size(); ++c)
      widths[c] = std::max(widths[c], line[c].size());
  }
  for (const auto& line : cells) {
    for (size_t c = 0; c < line.size(); ++c) {
      std::printf(c == 0 ? "%-*s" : "  %*s", static_cast<int>(widths[c]),
                  line[c].c_str());
    }
    std::printf("\n");
  }
}

}  // namespace tensormem::cli
