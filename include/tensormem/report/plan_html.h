// RenderPlanHtml: one self-contained HTML page picturing a placement.
//
// Every buffer with an offset is drawn as a rectangle spanning its lifetime
// (x) and its address range (y), coloured by size; hovering shows id, size,
// lifetime and offset; dragging zooms, the wheel zooms time, and a time-range
// filter narrows the view. Blocks too small to see are aggregated into a
// density layer, so sets of 10^6 buffers stay responsive. No network needed.
//
//   absl::StatusOr<BufferSet> placed = ReadBufferSetCsv("plan.csv");
//   std::string html = RenderPlanHtml(*placed, "resnet50, greedy by size");
//   TM_RETURN_IF_ERROR(WriteHtmlFile("plan.html", html));
#ifndef TENSORMEM_REPORT_PLAN_HTML_H_
#define TENSORMEM_REPORT_PLAN_HTML_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "tensormem/plan/buffer_set.h"

namespace tensormem {

// The page: a summary table (buffers, height, peak live, height / peak live)
// and the placement chart. Buffers without an offset are counted, not drawn.
std::string RenderPlanHtml(const BufferSet& placed, std::string_view title);

// Writes `html` to `path` (WriteTextFile); the error names the path.
absl::Status WriteHtmlFile(const std::string& path, std::string_view html);

}  // namespace tensormem

#endif  // TENSORMEM_REPORT_PLAN_HTML_H_
