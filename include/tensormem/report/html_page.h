// HtmlPage: builds one self-contained HTML report (inline CSS, SVG and JS).
//
// Every report tensormem writes opens from disk with no network: styles and
// scripts are inlined, data is embedded as JSON. Sections are appended in
// order; each chart kind adds its script to the page once.
//
//   HtmlPage page("resnet50 plan");
//   page.AddHeading("Summary");
//   page.AddTable({"metric", "value"}, {{"peak live", "12.00MiB"}});
//   page.AddPlacementChart(placed);  // a BufferSet with offsets
//   std::string html = page.Render();
#ifndef TENSORMEM_REPORT_HTML_PAGE_H_
#define TENSORMEM_REPORT_HTML_PAGE_H_

#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"

namespace tensormem {

struct BufferSet;
struct RatioChartData;
struct TimelineChartData;

// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string HtmlEscape(std::string_view text);

// Serializes `data` so it can sit inside <script type="application/json">
// (no "</" that would end the script element early).
std::string JsonForScript(const nlohmann::json& data);

class HtmlPage {
 public:
  explicit HtmlPage(std::string_view title);

  void AddHeading(std::string_view text);
  void AddParagraph(std::string_view text);
  // Preformatted text, e.g. an allocator's failure explanation.
  void AddPreformatted(std::string_view text);
  // A table; cells are plain text (escaped). `css_class` lets tests find it.
  void AddTable(const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows,
                std::string_view css_class = "tm-table");
  // A table whose first column links to `hrefs` (one per row; empty: no link).
  void AddLinkedTable(const std::vector<std::string>& header,
                      const std::vector<std::vector<std::string>>& rows,
                      const std::vector<std::string>& hrefs);
  // Every buffer with an offset as a rectangle in (time x address).
  // `time_label` names the x axis ("time step", "event").
  void AddPlacementChart(const BufferSet& placed,
                         std::string_view time_label = "time step");
  // Bytes over time: several named series, the peak of the first one marked.
  void AddTimelineChart(const TimelineChartData& timeline);
  // Ratios over a floor as grouped bars (ratio_chart.h); static SVG.
  void AddRatioChart(const RatioChartData& chart);

  std::string Render() const;

 private:
  void AppendTable(const std::vector<std::string>& header,
                   const std::vector<std::vector<std::string>>& rows,
                   const std::vector<std::string>& hrefs,
                   std::string_view css_class);

  std::string title_;
  std::string body_;
  int next_chart_id_ = 0;
  bool needs_placement_script_ = false;
  bool needs_timeline_script_ = false;
};

}  // namespace tensormem

#endif  // TENSORMEM_REPORT_HTML_PAGE_H_
