// TimelineChartData: bytes over time for a line chart in an HTML report.
//
// The memory timeline of a replay (live, in-use and pool bytes over events)
// is the main user; any set of series sharing one x axis works.
//
//   TimelineChartData timeline;
//   timeline.x_label = "event";
//   timeline.x = {0, 1, 2};
//   timeline.series = {{"live", {0, 4096, 0}},
//                      {"pool", {0, 2097152, 2097152}}};
//   timeline.peak_x = 1;  // marked with a vertical line
//   page.AddTimelineChart(timeline);
#ifndef TENSORMEM_REPORT_TIMELINE_CHART_H_
#define TENSORMEM_REPORT_TIMELINE_CHART_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tensormem {

struct TimelineSeries {
  std::string name;
  std::vector<uint64_t> values;  // one per x
};

struct TimelineChartData {
  std::string x_label = "event";
  std::vector<int64_t> x;
  std::vector<TimelineSeries> series;
  // Where the first series peaks, and its value, marked on the chart.
  std::optional<int64_t> peak_x;
  uint64_t peak_value = 0;
};

}  // namespace tensormem

#endif  // TENSORMEM_REPORT_TIMELINE_CHART_H_
