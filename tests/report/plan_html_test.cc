#include "tensormem/report/plan_html.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/report/html_page.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

BufferSet TwoBuffers() {
  BufferSet set;
  set.buffers.push_back(
      {.id = 7, .lower = 0, .upper = 3, .size = 4096, .offset = 0});
  set.buffers.push_back(
      {.id = 9, .lower = 2, .upper = 5, .size = 1024, .offset = 4096});
  return set;
}

TEST(PlanHtmlTest, PageIsSelfContainedAndHoldsTheData) {
  const std::string html = RenderPlanHtml(TwoBuffers(), "two <buffers>");
  EXPECT_THAT(html, HasSubstr("<!DOCTYPE html>"));
  EXPECT_THAT(html, HasSubstr("<title>two &lt;buffers&gt;</title>"));
  EXPECT_THAT(html, HasSubstr("\"id\":[7,9]"));
  EXPECT_THAT(html, HasSubstr("\"offset\":[0,4096]"));
  EXPECT_THAT(html, HasSubstr("\"peak_live\":5120"));
  EXPECT_THAT(html, HasSubstr("tm.placementChart = function"));
  // Height 5120 equals peak live: ratio 1.
  EXPECT_THAT(html, HasSubstr("<td>1.0000</td>"));
  // Nothing is fetched from the network.
  EXPECT_THAT(html, Not(HasSubstr("http://cdn")));
  EXPECT_THAT(html, Not(HasSubstr("src=\"http")));
}

TEST(PlanHtmlTest, BuffersWithoutOffsetAreCountedNotDrawn) {
  BufferSet set = TwoBuffers();
  set.buffers.push_back(
      {.id = 11, .lower = 0, .upper = 1, .size = 8, .offset = std::nullopt});
  const std::string html = RenderPlanHtml(set, "partial");
  EXPECT_THAT(html, HasSubstr("\"id\":[7,9]"));
  EXPECT_THAT(html,
              HasSubstr("buffers without offset (not drawn)</td><td>1</td>"));
}

TEST(HtmlPageTest, EscapesTextAndScriptEndings) {
  EXPECT_EQ(HtmlEscape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(JsonForScript(nlohmann::json("</script>")), "\"<\\/script>\"");
}

TEST(HtmlPageTest, LinkedTableLinksFirstColumn) {
  HtmlPage page("t");
  page.AddLinkedTable({"workload", "peak"}, {{"a", "1"}, {"b", "2"}},
                      {"a.html", ""});
  const std::string html = page.Render();
  EXPECT_THAT(html, HasSubstr("<td><a href=\"a.html\">a</a></td><td>1</td>"));
  EXPECT_THAT(html, HasSubstr("<td>b</td><td>2</td>"));
  // No chart: no script at all.
  EXPECT_THAT(html, Not(HasSubstr("<script>")));
}

}  // namespace
}  // namespace tensormem
