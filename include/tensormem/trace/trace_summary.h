// What a trace asks of an allocator, counted with the replay's own metric
// definitions (docs/design.md §4), so `tensormem convert` and `tensormem
// replay` report the same peak of live bytes for the same input.
//
//   TM_ASSIGN_OR_RETURN(TraceSummary summary, SummarizeTrace(trace));
//   std::cout << summary.peak_live_bytes;  // == the replay's peak live
#ifndef TENSORMEM_TRACE_TRACE_SUMMARY_H_
#define TENSORMEM_TRACE_TRACE_SUMMARY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tensormem/trace/replay.h"
#include "tensormem/trace/trace.h"

namespace tensormem {

// The counts a replay reports when no allocation fails in the allocator.
struct TraceSummary {
  int64_t events = 0;
  int64_t allocs = 0;  // allocations the trace does not record as failed
  int64_t frees = 0;
  int64_t failed_allocs = 0;     // allocations recorded as failed in the trace
  int64_t live_at_end = 0;       // blocks never freed
  uint64_t peak_live_bytes = 0;  // PreparedTrace::peak_live_bytes
};

// Summarizes a prepared trace (already checked).
TraceSummary SummarizeTrace(const PreparedTrace& trace);
// Prepares `trace` (the replay's checks: frees of live ids only, alignments
// powers of two, live bytes within 64 bits) and summarizes it. Errors name the
// event.
absl::StatusOr<TraceSummary> SummarizeTrace(const Trace& trace);

// events, allocs, frees, failed_allocs, live_at_end, peak_live_bytes: the keys
// ReplayMetricsToJson uses for the same quantities.
nlohmann::ordered_json TraceSummaryToJson(const TraceSummary& summary);

}  // namespace tensormem

#endif  // TENSORMEM_TRACE_TRACE_SUMMARY_H_
