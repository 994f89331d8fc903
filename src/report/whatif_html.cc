#include "tensormem/report/whatif_html.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tensormem/core/units.h"
#include "tensormem/report/html_page.h"
#include "tensormem/report/timeline_chart.h"
#include "tensormem/report/whatif_text.h"

namespace tensormem {
namespace {

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
  for (const std::string& line : WhatIfRecordedLines(result))
    page.AddParagraph(line);
  if (result.recommendation) {
    page.AddHeading("Recommendation");
    for (const std::string& line : result.recommendation->lines)
      page.AddParagraph(line);
  }
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
