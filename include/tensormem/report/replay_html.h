// RenderReplayHtml: one self-contained HTML page explaining a trace replay.
//
// The page holds a summary of the metrics (docs/design.md §4), the memory
// timeline (live, in-use and pool bytes over events, peak live marked), the
// placement chart (every block as a rectangle in event x offset), and, for
// each failed allocation kept by the replay, the free chunks at that moment
// and why none of them could take the request.
//
//   ReplayOptions options{.record_placement = true,
//                         .max_timeline_samples = 2000};
//   TM_ASSIGN_OR_RETURN(ReplayResult result,
//                       Replay(prepared, target, options));
//   std::string html =
//       RenderReplayHtml(result, "bert.trace", "bfc(simulated, growth)");
#ifndef TENSORMEM_REPORT_REPLAY_HTML_H_
#define TENSORMEM_REPORT_REPLAY_HTML_H_

#include <optional>
#include <string>
#include <string_view>

#include "tensormem/trace/replay.h"

namespace tensormem {

struct ReplayReportExtras {
  std::optional<MinimumLimit> min_limit;
};

std::string RenderReplayHtml(const ReplayResult& result, std::string_view title,
                             std::string_view allocator_description,
                             const ReplayReportExtras& extras = {});

// Why the request did not fit, in one sentence, from the free chunks the
// replay recorded (e.g. "1.00MiB free in 3 chunks, the largest 512.00KiB:
// too fragmented for 600.00KiB").
std::string ExplainFailure(const FailedAllocation& failure);

}  // namespace tensormem

#endif  // TENSORMEM_REPORT_REPLAY_HTML_H_
