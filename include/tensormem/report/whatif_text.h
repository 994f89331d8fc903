// The what-if comparison in words: the table `tensormem whatif` prints (and
// the HTML page shows), the recorded row's check and the recommendation.
//
//   TM_ASSIGN_OR_RETURN(WhatIfResult result,
//                       RunWhatIf(prepared, candidates, options));
//   std::cout << RenderWhatIfText(result);
#ifndef TENSORMEM_REPORT_WHATIF_TEXT_H_
#define TENSORMEM_REPORT_WHATIF_TEXT_H_

#include <string>
#include <vector>

#include "tensormem/trace/whatif.h"

namespace tensormem {

// Header and rows of the comparison table; a snapshot's recorded row first.
std::vector<std::string> WhatIfTableHeader();
std::vector<std::vector<std::string>> WhatIfTableRows(
    const WhatIfResult& result);

// Whether the candidate with the recording's settings, replayed as the GPU
// ran it, reproduces the recording (one line, then the first divergence);
// empty without a recording.
std::vector<std::string> WhatIfRecordedLines(const WhatIfResult& result);

// Everything above, then the recommendation, bisection notes and where
// candidates ran out of memory.
std::string RenderWhatIfText(const WhatIfResult& result);

}  // namespace tensormem

#endif  // TENSORMEM_REPORT_WHATIF_TEXT_H_
