// What-if against a recording: the candidate with the recording's settings,
// the recorded row and its check, and the recommendation (whatif.h).
#ifndef TENSORMEM_TRACE_WHATIF_RECORDED_H_
#define TENSORMEM_TRACE_WHATIF_RECORDED_H_

#include <optional>
#include <vector>

#include "tensormem/trace/pytorch_recording.h"
#include "tensormem/trace/replay.h"
#include "tensormem/trace/whatif.h"

namespace tensormem::trace_internal {

// The recorded row: what the recording reserved, and the `pytorch`
// candidate with the recording's settings (inserted before the first `pytorch`
// candidate or at the front when none has them) replayed as the GPU ran it,
// verified (`as_run_error` when it cannot be). When the recording tells the
// device's capacity (out-of-memory retries or failures), every candidate
// without a memory limit gets it: they all run on that device.
struct RecordedComparison {
  WhatIfRecorded recorded;
  // The recorded candidate's replay as the GPU ran it, with a timeline: its
  // row. Unset when it could not be replayed so.
  std::optional<ReplayResult> as_run;
};
RecordedComparison CompareWithRecording(
    const PreparedTrace& trace, const PytorchRecording& recording,
    std::vector<WhatIfCandidate>& candidates);

// The advice over finished rows; unset when no row is a baseline.
std::optional<WhatIfRecommendation> Recommend(const WhatIfResult& result);

}  // namespace tensormem::trace_internal

#endif  // TENSORMEM_TRACE_WHATIF_RECORDED_H_
