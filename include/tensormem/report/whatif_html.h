// The what-if comparison as one self-contained HTML page: the table of
// `tensormem whatif` (whatif_text.h) with the recorded row's check and the
// recommendation, and reserved bytes over time for every candidate on one
// chart, with peak live bytes as the floor.
//
//   WhatIfOptions options;
//   options.timeline_samples = 1000;
//   TM_ASSIGN_OR_RETURN(WhatIfResult result,
//                       RunWhatIf(prepared, candidates, options));
//   TM_RETURN_IF_ERROR(WriteHtmlFile("whatif.html",
//                                    RenderWhatIfHtml(result, "my run")));
#ifndef TENSORMEM_REPORT_WHATIF_HTML_H_
#define TENSORMEM_REPORT_WHATIF_HTML_H_

#include <string>
#include <string_view>

#include "tensormem/trace/whatif.h"

namespace tensormem {

std::string RenderWhatIfHtml(const WhatIfResult& result,
                             std::string_view title);

}  // namespace tensormem

#endif  // TENSORMEM_REPORT_WHATIF_HTML_H_
