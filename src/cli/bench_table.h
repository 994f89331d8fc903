// The result table of `tensormem bench`: one row per workload, printed as
// text, HTML and JSON, with a median/max summary of each ratio column.
#ifndef TENSORMEM_CLI_BENCH_TABLE_H_
#define TENSORMEM_CLI_BENCH_TABLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace tensormem::cli {

struct BenchRow {
  std::string workload;
  std::string kind;
  std::string page;  // relative to the out directory
  uint64_t peak_live = 0;
  std::optional<uint64_t> bfc_peak_pool;
  std::optional<double> bfc_fragmentation, min_limit_ratio, bfc_ns_per_op,
      system_ns_per_op;
  std::optional<int64_t> bfc_failed_allocs;
  std::optional<double> best_plan_ratio;
  std::string best_plan_strategy;
  std::string min_limit_method;  // MinLimitMethodName, when searched
  std::vector<std::string> skipped_strategies;
};

// Column names, and one row's cells in the same order.
extern const std::vector<std::string> kHeader;
std::vector<std::string> Cells(const BenchRow& row);

nlohmann::json RowJson(const BenchRow& row);
// Aligned text table on stdout.
void PrintTable(const std::vector<BenchRow>& rows);
// One line per ratio column: "TF-BFC peak pool / peak live over 40 workloads:
// median 1.4100, max 2.5700".
std::vector<std::string> SummaryLines(const std::vector<BenchRow>& rows);

}  // namespace tensormem::cli

#endif  // TENSORMEM_CLI_BENCH_TABLE_H_
