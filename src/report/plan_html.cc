#include "tensormem/report/plan_html.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tensormem/core/file_io.h"
#include "tensormem/core/units.h"
#include "tensormem/report/html_page.h"

namespace tensormem {

std::string RenderPlanHtml(const BufferSet& placed, std::string_view title) {
  uint64_t height = 0;
  size_t unplaced = 0;
  for (const Buffer& buffer : placed.buffers) {
    if (!buffer.offset) {
      ++unplaced;
      continue;
    }
    height = std::max(height, *buffer.offset + buffer.size);
  }
  const uint64_t peak_live = PeakLiveBytes(placed);
  HtmlPage page(title);
  page.AddHeading("Summary");
  std::vector<std::vector<std::string>> rows = {
      {"buffers", absl::StrCat(placed.buffers.size())},
      {"height (highest offset + size)",
       absl::StrCat(HumanBytes(height), " (", height, " B)")},
      {"peak live (lower bound)",
       absl::StrCat(HumanBytes(peak_live), " (", peak_live, " B)")},
      {"height / peak live",
       peak_live == 0
           ? "-"
           : absl::StrFormat("%.4f", static_cast<double>(height) / peak_live)}};
  if (unplaced > 0)
    rows.push_back(
        {"buffers without offset (not drawn)", absl::StrCat(unplaced)});
  page.AddTable({"metric", "value"}, rows, "tm-table tm-summary");
  page.AddHeading("Placement");
  page.AddPlacementChart(placed, "time step");
  return page.Render();
}

absl::Status WriteHtmlFile(const std::string& path, std::string_view html) {
  return WriteTextFile(path, html);
}

}  // namespace tensormem
