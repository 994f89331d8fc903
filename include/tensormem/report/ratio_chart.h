// Ratios as grouped horizontal bars, drawn as static inline SVG (no script):
// one group per category (a workload, a planner), one bar per series (an
// allocator, a statistic), and a line at 1, the floor every ratio is over
// (peak live bytes, a plan's lower bound).
//
//   RatioChartData chart;
//   chart.value_label = "reserved / peak live";
//   chart.series = {"tf", "tight"};
//   chart.categories = {"resnet50.train_b8"};
//   chart.values = {{1.73, 1.02}};
//   page.AddRatioChart(chart);
#ifndef TENSORMEM_REPORT_RATIO_CHART_H_
#define TENSORMEM_REPORT_RATIO_CHART_H_

#include <optional>
#include <string>
#include <vector>

namespace tensormem {

struct RatioChartData {
  std::string value_label;              // what the x axis measures
  std::vector<std::string> series;      // one colour each, in the legend
  std::vector<std::string> categories;  // the groups, top to bottom
  // values[c][s]: category c, series s; unset: no bar (not measured).
  std::vector<std::vector<std::optional<double>>> values;
};

// The chart as an <svg> element: each bar is a <rect class="tm-bar"> with a
// <title> naming its category, series and value.
std::string RenderRatioChartSvg(const RatioChartData& chart);

}  // namespace tensormem

#endif  // TENSORMEM_REPORT_RATIO_CHART_H_
