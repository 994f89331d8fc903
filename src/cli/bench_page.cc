#include "cli/bench_page.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "tensormem/report/html_page.h"
#include "tensormem/report/ratio_chart.h"

namespace tensormem::cli {
namespace {

// Median and worst of each series over the categories, as two bars each.
RatioChartData SpreadChart(std::string value_label,
                           const std::vector<std::string>& names,
                           const std::vector<Spread>& spreads) {
  RatioChartData chart;
  chart.value_label = std::move(value_label);
  chart.series = {"median", "worst"};
  for (size_t i = 0; i < names.size(); ++i) {
    if (spreads[i].count == 0) continue;
    chart.categories.push_back(names[i]);
    chart.values.push_back({spreads[i].median, spreads[i].max});
  }
  return chart;
}

// The recorded ratio first, then each allocator's.
std::vector<Spread> SnapshotSpreads(const std::vector<SnapshotRow>& rows) {
  std::vector<double> recorded;
  for (const SnapshotRow& row : rows) {
    if (row.recorded_ratio) recorded.push_back(*row.recorded_ratio);
  }
  std::vector<Spread> spreads = {SpreadOf(std::move(recorded))};
  for (const Spread& spread : AllocatorSpreads(rows)) spreads.push_back(spread);
  return spreads;
}

void AddTraceCharts(const std::vector<BenchRow>& rows, HtmlPage& page) {
  std::vector<const BenchRow*> traces;
  for (const BenchRow& row : rows) {
    if (!row.allocator_ratios.empty()) traces.push_back(&row);
  }
  if (traces.empty()) return;
  page.AddHeading("Allocators on the traces: reserved / peak live");
  page.AddParagraph(absl::StrFormat(
      "Each of the %d traces replayed through TensorFlow's BFC (tf), PyTorch's "
      "caching allocator (pytorch, and with expandable segments) and "
      "tensormem's tight, all growing on demand. 1 means no byte reserved "
      "beyond what is live at the peak; lower is better.",
      traces.size()));
  page.AddRatioChart(SpreadChart("reserved / peak live", kBenchAllocatorNames,
                                 AllocatorSpreads(rows)));
  RatioChartData chart;
  chart.value_label = "reserved / peak live";
  chart.series = kBenchAllocatorNames;
  for (const BenchRow* row : traces) {
    chart.categories.push_back(row->workload);
    chart.values.push_back(row->allocator_ratios);
  }
  page.AddRatioChart(chart);
}

void AddSnapshotCharts(const std::vector<SnapshotRow>& snapshots,
                       HtmlPage& page) {
  if (snapshots.empty()) return;
  page.AddHeading("Real GPU snapshots: reserved / peak live");
  page.AddParagraph(
      "PyTorch memory snapshots recorded on real GPUs: what PyTorch's "
      "allocator reserved there (recorded), and each allocator replaying the "
      "same requests. The pytorch row with the snapshot's settings is checked "
      "against the recording (tensormem whatif).");
  RatioChartData chart;
  chart.value_label = "reserved / peak live";
  chart.series = {"recorded by PyTorch"};
  chart.series.insert(chart.series.end(), kBenchAllocatorNames.begin(),
                      kBenchAllocatorNames.end());
  std::vector<std::vector<std::string>> table;
  for (const SnapshotRow& row : snapshots) {
    chart.categories.push_back(row.name);
    std::vector<std::optional<double>> values = {row.recorded_ratio};
    values.insert(values.end(), row.allocator_ratios.begin(),
                  row.allocator_ratios.end());
    chart.values.push_back(std::move(values));
    table.push_back(SnapshotCells(row));
  }
  page.AddRatioChart(SpreadChart("reserved / peak live", chart.series,
                                 SnapshotSpreads(snapshots)));
  page.AddRatioChart(chart);
  page.AddTable(SnapshotHeader(), table, "tm-table tm-snapshots");
}

void AddPlannerCharts(const std::vector<BenchRow>& rows, HtmlPage& page) {
  const std::vector<std::pair<std::string, Spread>> spreads =
      PlannerSpreads(rows);
  if (spreads.empty()) return;
  page.AddHeading("Planners on the buffer sets: arena / lower bound");
  page.AddParagraph(
      "Each buffer set planned offline by every planner; the lower bound is "
      "the peak of live bytes, so 1 is optimal. optimal searches for a few "
      "seconds per set.");
  std::vector<std::string> names;
  std::vector<Spread> values;
  for (const auto& [name, spread] : spreads) {
    names.push_back(name);
    values.push_back(spread);
  }
  page.AddRatioChart(SpreadChart("arena / peak live", names, values));
  std::vector<std::string> header = {"buffer set"};
  header.insert(header.end(), names.begin(), names.end());
  std::vector<std::vector<std::string>> table;
  for (const BenchRow& row : rows) {
    if (row.plan_ratios.empty()) continue;
    std::vector<std::string> cells = {row.workload};
    for (const std::string& name : names) {
      const auto it =
          std::find_if(row.plan_ratios.begin(), row.plan_ratios.end(),
                       [&](const auto& plan) { return plan.first == name; });
      cells.push_back(it == row.plan_ratios.end()
                          ? "-"
                          : absl::StrFormat("%.4f", it->second));
    }
    table.push_back(std::move(cells));
  }
  page.AddTable(header, table, "tm-table tm-planners");
}

}  // namespace

std::string RenderBenchPage(const std::string& corpus,
                            const std::vector<BenchRow>& rows,
                            const std::vector<SnapshotRow>& snapshots) {
  HtmlPage page("tensormem bench: " + corpus);
  for (const std::string& line : SummaryLines(rows, snapshots))
    page.AddParagraph(line);
  AddTraceCharts(rows, page);
  AddSnapshotCharts(snapshots, page);
  AddPlannerCharts(rows, page);
  page.AddHeading("Every workload");
  page.AddParagraph(
      "Click a workload for its picture: a trace's memory timeline and "
      "placement under tight, or a buffer set's best plan.");
  std::vector<std::vector<std::string>> table;
  std::vector<std::string> links;
  for (const BenchRow& row : rows) {
    table.push_back(Cells(row));
    links.push_back(row.page);
  }
  page.AddLinkedTable(BenchHeader(), table, links);
  return page.Render();
}

}  // namespace tensormem::cli
