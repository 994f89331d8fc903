#include "tensormem/report/whatif_html.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tensormem/core/units.h"
#include "tensormem/report/html_page.h"
#include "tensormem/report/timeline_chart.h"

namespace tensormem {
namespace {

std::string MinLimitCell(const WhatIfRow& row) {
  if (!row.min_limit) return row.min_limit_error.empty() ? "-" : "none";
  return absl::StrFormat("%s%s", HumanBytes(row.min_limit->limit_bytes),
                         row.min_limit->method == MinLimitMethod::kBisection
                             ? " (bisection)"
                             : "");
}

std::string OutOfMemoryCell(const WhatIfRow& row) {
  if (!row.device_memory_checked) return "-";
  if (!row.out_of_memory) return "fits";
  return absl::StrFormat("OOM at event %d (%s)", row.out_of_memory->event,
                         HumanBytes(row.out_of_memory->bytes));
}

// Allocators that learn loops (planned): reserved from the iteration their
// plan began to serve, and over live bytes then.
std::string SteadyCell(const WhatIfRow& row) {
  const ReplayMetrics& metrics = row.metrics;
  if (!metrics.steady_pool_bytes || metrics.steady_live_bytes.value_or(0) == 0)
    return "-";
  return absl::StrFormat("%s (%.4f)", HumanBytes(*metrics.steady_pool_bytes),
                         static_cast<double>(*metrics.steady_pool_bytes) /
                             *metrics.steady_live_bytes);
}

TimelineChartData ReservedChart(const WhatIfResult& result) {
  TimelineChartData chart;
  chart.x_label = "event";
  chart.x = result.timeline_events;
  // The floor first: its peak is the one the chart marks.
  chart.series.push_back(
      {"peak live",
       std::vector<uint64_t>(chart.x.size(), result.peak_live_bytes)});
  for (const WhatIfRow& row : result.rows)
    chart.series.push_back({row.label, row.reserved_timeline});
  return chart;
}

}  // namespace

std::vector<std::string> WhatIfTableHeader() {
  return {"candidate",     "peak reserved", "reserved/live",
          "frag. at peak", "min limit",     "min limit/live",
          "ns/op",         "device memory", "steady reserved"};
}

std::vector<std::vector<std::string>> WhatIfTableRows(
    const WhatIfResult& result) {
  std::vector<std::vector<std::string>> rows;
  for (const WhatIfRow& row : result.rows) {
    rows.push_back(
        {row.label, HumanBytes(row.metrics.peak_pool_bytes),
         absl::StrFormat("%.4f", row.metrics.fragmentation),
         absl::StrFormat("%.1f%%", 100 * row.fragmentation_at_peak),
         MinLimitCell(row),
         row.min_limit ? absl::StrFormat("%.4f", row.min_limit->ratio) : "-",
         absl::StrFormat("%.1f", row.metrics.ns_per_op), OutOfMemoryCell(row),
         SteadyCell(row)});
  }
  return rows;
}

std::string RenderWhatIfHtml(const WhatIfResult& result,
                             std::string_view title) {
  HtmlPage page(title);
  page.AddHeading("What-if: one workload, several allocators");
  page.AddParagraph(absl::StrCat(
      "Peak live bytes: ", HumanBytes(result.peak_live_bytes),
      result.device_memory
          ? absl::StrCat("; device memory: ", HumanBytes(*result.device_memory))
          : std::string()));
  page.AddTable(WhatIfTableHeader(), WhatIfTableRows(result),
                "tm-table tm-whatif");
  if (!result.timeline_events.empty()) {
    page.AddHeading("Reserved bytes over time (peak live as the floor)");
    page.AddTimelineChart(ReservedChart(result));
  }
  for (const WhatIfRow& row : result.rows) {
    if (!row.out_of_memory || row.out_of_memory->explanation.empty()) continue;
    page.AddHeading(absl::StrCat(row.label, ": out of memory at event ",
                                 row.out_of_memory->event));
    page.AddPreformatted(row.out_of_memory->explanation);
  }
  return page.Render();
}

}  // namespace tensormem
