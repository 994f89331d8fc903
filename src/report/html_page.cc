#include "tensormem/report/html_page.h"

#include <charconv>

#include "absl/strings/str_cat.h"
#include "report/scripts.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/report/ratio_chart.h"
#include "tensormem/report/timeline_chart.h"

namespace tensormem {
namespace {

// Appends `values` as a JSON array without building a json tree: placement
// charts carry up to millions of numbers.
template <typename T>
void AppendNumberArray(std::string& out, std::string_view key,
                       const std::vector<T>& values) {
  absl::StrAppend(&out, "\"", absl::string_view(key.data(), key.size()),
                  "\":[");
  char buffer[32];
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out.push_back(',');
    const auto result =
        std::to_chars(buffer, buffer + sizeof(buffer), values[i]);
    out.append(buffer, result.ptr);
  }
  out.push_back(']');
}

std::string PlacementChartJson(const BufferSet& placed,
                               std::string_view time_label) {
  std::vector<uint64_t> ids, sizes, offsets;
  std::vector<int64_t> lowers, uppers;
  for (const Buffer& buffer : placed.buffers) {
    if (!buffer.offset) continue;
    ids.push_back(buffer.id);
    lowers.push_back(buffer.lower);
    uppers.push_back(buffer.upper);
    offsets.push_back(*buffer.offset);
    sizes.push_back(buffer.size);
  }
  std::string out = "{";
  absl::StrAppend(&out, "\"time_label\":", nlohmann::json(time_label).dump(),
                  ",\"peak_live\":", PeakLiveBytes(placed), ",");
  AppendNumberArray(out, "id", ids);
  out.push_back(',');
  AppendNumberArray(out, "lower", lowers);
  out.push_back(',');
  AppendNumberArray(out, "upper", uppers);
  out.push_back(',');
  AppendNumberArray(out, "offset", offsets);
  out.push_back(',');
  AppendNumberArray(out, "size", sizes);
  out.push_back('}');
  return out;
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string JsonForScript(const nlohmann::json& data) {
  const std::string text = data.dump();
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    // "<\/" is the same JSON string as "</" but cannot close the script.
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

HtmlPage::HtmlPage(std::string_view title) : title_(title) {}

void HtmlPage::AddHeading(std::string_view text) {
  absl::StrAppend(&body_, "<h2>", HtmlEscape(text), "</h2>\n");
}

void HtmlPage::AddParagraph(std::string_view text) {
  absl::StrAppend(&body_, "<p>", HtmlEscape(text), "</p>\n");
}

void HtmlPage::AddPreformatted(std::string_view text) {
  absl::StrAppend(&body_, "<pre>", HtmlEscape(text), "</pre>\n");
}

void HtmlPage::AddTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows,
                        std::string_view css_class) {
  AppendTable(header, rows, {}, css_class);
}

void HtmlPage::AddLinkedTable(const std::vector<std::string>& header,
                              const std::vector<std::vector<std::string>>& rows,
                              const std::vector<std::string>& hrefs) {
  AppendTable(header, rows, hrefs, "tm-table");
}

void HtmlPage::AppendTable(const std::vector<std::string>& header,
                           const std::vector<std::vector<std::string>>& rows,
                           const std::vector<std::string>& hrefs,
                           std::string_view css_class) {
  absl::StrAppend(&body_, "<table class=\"", HtmlEscape(css_class),
                  "\">\n<tr>");
  for (const std::string& name : header)
    absl::StrAppend(&body_, "<th>", HtmlEscape(name), "</th>");
  body_ += "</tr>\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    body_ += "<tr>";
    for (size_t c = 0; c < rows[r].size(); ++c) {
      const std::string cell = HtmlEscape(rows[r][c]);
      if (c == 0 && r < hrefs.size() && !hrefs[r].empty()) {
        absl::StrAppend(&body_, "<td><a href=\"", HtmlEscape(hrefs[r]), "\">",
                        cell, "</a></td>");
      } else {
        absl::StrAppend(&body_, "<td>", cell, "</td>");
      }
    }
    body_ += "</tr>\n";
  }
  body_ += "</table>\n";
}

void HtmlPage::AddPlacementChart(const BufferSet& placed,
                                 std::string_view time_label) {
  const std::string id = absl::StrCat("tm-chart-", next_chart_id_++);
  absl::StrAppend(
      &body_, "<div class=\"tm-placement-chart\" id=\"", id, "\">\n",
      "<div class=\"tm-controls\">time from <input class=\"tm-from\" "
      "type=\"number\"> to ",
      "<input class=\"tm-to\" type=\"number\"> <button "
      "class=\"tm-apply\">apply</button> ",
      "<button class=\"tm-reset\">reset zoom</button><span "
      "class=\"tm-info\"></span></div>\n",
      "<div class=\"tm-legend\">colour: buffer size (blue small, red large); "
      "grey cells: ",
      "buffers too small to draw at this zoom, darker = more covered. Drag to "
      "zoom, wheel zooms ",
      "time.</div>\n<div class=\"tm-chart-box\"><svg class=\"tm-placement\" ",
      "xmlns=\"http://www.w3.org/2000/svg\"></svg><div "
      "class=\"tm-tooltip\"></div></div>\n",
      "<script type=\"application/json\" class=\"tm-data\">",
      PlacementChartJson(placed, time_label), "</script>\n</div>\n");
  needs_placement_script_ = true;
}

void HtmlPage::AddTimelineChart(const TimelineChartData& timeline) {
  nlohmann::json data = {{"x_label", timeline.x_label},
                         {"x", timeline.x},
                         {"peak_value", timeline.peak_value},
                         {"peak_x", nullptr},
                         {"series", nlohmann::json::array()}};
  if (timeline.peak_x) data["peak_x"] = *timeline.peak_x;
  for (const TimelineSeries& series : timeline.series) {
    data["series"].push_back(
        {{"name", series.name}, {"values", series.values}});
  }
  const std::string id = absl::StrCat("tm-chart-", next_chart_id_++);
  absl::StrAppend(
      &body_, "<div class=\"tm-timeline-chart\" id=\"", id, "\">\n",
      "<div class=\"tm-legend\"></div>\n<div class=\"tm-chart-box\"><svg ",
      "class=\"tm-timeline\" xmlns=\"http://www.w3.org/2000/svg\"></svg>",
      "<div class=\"tm-tooltip\"></div></div>\n",
      "<script type=\"application/json\" class=\"tm-data\">",
      JsonForScript(data), "</script>\n</div>\n");
  needs_timeline_script_ = true;
}

void HtmlPage::AddRatioChart(const RatioChartData& chart) {
  absl::StrAppend(&body_, "<figure>", RenderRatioChartSvg(chart),
                  "</figure>\n");
}

std::string HtmlPage::Render() const {
  using report_internal::kCommonScript;
  std::string page;
  page.reserve(body_.size() + 32 * 1024);
  absl::StrAppend(
      &page,
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
      "<title>", HtmlEscape(title_), "</title>\n<style>",
      report_internal::kPageStyle, "</style>\n</head>\n<body>\n<h1>",
      HtmlEscape(title_), "</h1>\n", body_);
  if (needs_placement_script_ || needs_timeline_script_) {
    absl::StrAppend(&page, "<script>", kCommonScript);
    if (needs_placement_script_) page += report_internal::kPlacementChartScript;
    if (needs_timeline_script_) page += report_internal::kTimelineChartScript;
    page +=
        "document.querySelectorAll('.tm-timeline-chart').forEach(function "
        "(root) {"
        " if (tm.timelineChart) tm.timelineChart(root); });\n"
        "document.querySelectorAll('.tm-placement-chart').forEach(function "
        "(root) {"
        " if (tm.placementChart) tm.placementChart(root); });\n"
        "document.body.dataset.loadMs = Math.round(performance.now());\n"
        "document.body.dataset.ready = 'true';\n</script>\n";
  }
  page += "</body>\n</html>\n";
  return page;
}

}  // namespace tensormem
