#include "tensormem/report/ratio_chart.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/report/html_page.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

size_t Count(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

RatioChartData TwoByTwo() {
  RatioChartData chart;
  chart.value_label = "reserved / peak live";
  chart.series = {"tf", "tight"};
  chart.categories = {"resnet<50>", "bert"};
  chart.values = {{1.73, 1.02}, {std::nullopt, 1.0}};
  return chart;
}

TEST(RatioChartTest, OneBarPerMeasuredValueNamedInItsTitle) {
  const std::string svg = RenderRatioChartSvg(TwoByTwo());
  EXPECT_EQ(Count(svg, "class=\"tm-bar\""), 3u);  // the unset value: no bar
  EXPECT_THAT(svg, HasSubstr("<title>resnet&lt;50&gt;, tf: 1.7300</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>bert, tight: 1.0000</title>"));
  EXPECT_THAT(svg, Not(HasSubstr("bert, tf")));
  EXPECT_THAT(svg, HasSubstr("reserved / peak live"));
}

TEST(RatioChartTest, BarsGrowWithTheRatioFromTheFloor) {
  const std::string svg = RenderRatioChartSvg(TwoByTwo());
  // The axis ends at 1.75 (a whole 0.25 step over 1.73): bar widths are
  // proportional to ratio - 1, and a ratio of exactly 1 keeps a 1-unit bar.
  EXPECT_THAT(svg, HasSubstr("width=\"506.1\""));  // (0.73 / 0.75) * 520
  EXPECT_THAT(svg, HasSubstr("width=\"13.9\""));   // (0.02 / 0.75) * 520
  EXPECT_THAT(svg, HasSubstr("width=\"1.0\""));
}

TEST(RatioChartTest, ThePageEmbedsTheChart) {
  HtmlPage page("ratios");
  page.AddRatioChart(TwoByTwo());
  const std::string html = page.Render();
  EXPECT_THAT(html, HasSubstr("<figure><svg class=\"tm-ratio-chart\""));
  EXPECT_EQ(Count(html, "class=\"tm-bar\""), 3u);
}

}  // namespace
}  // namespace tensormem
