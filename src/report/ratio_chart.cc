#include "tensormem/report/ratio_chart.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tensormem/report/html_page.h"

namespace tensormem {
namespace {

// Geometry in SVG units: labels on the left, bars to the right.
constexpr double kLabelWidth = 260;
constexpr double kPlotWidth = 520;
constexpr double kValueWidth = 50;  // the value printed after each bar
constexpr double kBarHeight = 9;
constexpr double kGroupGap = 8;
constexpr double kTop = 34;  // the legend
constexpr double kBottom = 30;

constexpr const char* kColours[] = {"#4e79a7", "#f28e2b", "#e15759",
                                    "#76b7b2", "#59a14f", "#edc948",
                                    "#b07aa1", "#ff9da7", "#9c755f"};

const char* Colour(size_t series) {
  return kColours[series % (sizeof(kColours) / sizeof(kColours[0]))];
}

// Tick spacing for an axis spanning `range` above 1: about 4 to 10 ticks.
double Step(double range) {
  if (range <= 0.2) return 0.05;
  if (range <= 1) return 0.25;
  if (range <= 3) return 0.5;
  if (range <= 8) return 1;
  return std::ceil(range / 8);
}

// The axis starts at 1 (the floor) and ends at a whole step above the
// largest value, so small differences near 1 stay visible.
double AxisEnd(const RatioChartData& chart) {
  double largest = 1;
  for (const auto& row : chart.values) {
    for (const std::optional<double>& value : row)
      if (value) largest = std::max(largest, *value);
  }
  const double step = Step(largest - 1);
  return 1 + step * std::max(1.0, std::ceil((largest - 1) / step - 1e-9));
}

void AppendLegend(const RatioChartData& chart, std::string& svg) {
  double x = kLabelWidth;
  for (size_t s = 0; s < chart.series.size(); ++s) {
    absl::StrAppendFormat(
        &svg,
        "<rect x=\"%.1f\" y=\"8\" width=\"12\" height=\"12\" fill=\"%s\"/>"
        "<text x=\"%.1f\" y=\"18\" class=\"tm-legend-text\">%s</text>",
        x, Colour(s), x + 16, HtmlEscape(chart.series[s]));
    x += 24 + 7.0 * chart.series[s].size();
  }
}

void AppendAxis(double end, double height, std::string& svg) {
  const double step = Step(end - 1);
  for (double tick = 1; tick <= end + 1e-9; tick += step) {
    const double x = kLabelWidth + (tick - 1) / (end - 1) * kPlotWidth;
    absl::StrAppendFormat(
        &svg,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
        "stroke=\"%s\"/><text x=\"%.1f\" y=\"%.1f\" "
        "text-anchor=\"middle\">%g</text>",
        x, kTop - 4, x, height - kBottom + 4, tick == 1 ? "#333" : "#ddd", x,
        height - kBottom + 16, tick);
  }
}

}  // namespace

std::string RenderRatioChartSvg(const RatioChartData& chart) {
  const size_t series = std::max<size_t>(1, chart.series.size());
  const double group = series * kBarHeight + kGroupGap;
  const double height = kTop + chart.categories.size() * group + kBottom;
  const double width = kLabelWidth + kPlotWidth + kValueWidth;
  const double end = AxisEnd(chart);
  std::string svg = absl::StrFormat(
      "<svg class=\"tm-ratio-chart\" xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
      "font-size=\"11\" font-family=\"sans-serif\">",
      width, height, width, height);
  AppendLegend(chart, svg);
  AppendAxis(end, height, svg);
  for (size_t c = 0; c < chart.categories.size(); ++c) {
    const double top = kTop + c * group;
    absl::StrAppendFormat(
        &svg, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
        kLabelWidth - 6, top + series * kBarHeight / 2 + 4,
        HtmlEscape(chart.categories[c]));
    for (size_t s = 0; s < chart.series.size(); ++s) {
      if (c >= chart.values.size() || s >= chart.values[c].size() ||
          !chart.values[c][s])
        continue;
      const double value = *chart.values[c][s];
      const double length =
          std::max(1.0, (std::min(value, end) - 1) / (end - 1) * kPlotWidth);
      absl::StrAppendFormat(
          &svg,
          "<rect class=\"tm-bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
          "height=\"%.1f\" fill=\"%s\"><title>%s, %s: %.4f</title></rect>"
          "<text x=\"%.1f\" y=\"%.1f\" font-size=\"8\">%.3f</text>",
          kLabelWidth, top + s * kBarHeight, length, kBarHeight - 1, Colour(s),
          HtmlEscape(chart.categories[c]), HtmlEscape(chart.series[s]), value,
          kLabelWidth + length + 3, top + (s + 1) * kBarHeight - 1.5, value);
    }
  }
  absl::StrAppendFormat(
      &svg,
      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text></svg>",
      kLabelWidth + kPlotWidth / 2, height - 2, HtmlEscape(chart.value_label));
  return svg;
}

}  // namespace tensormem
