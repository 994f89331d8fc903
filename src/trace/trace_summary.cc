#include "tensormem/trace/trace_summary.h"

namespace tensormem {

TraceSummary SummarizeTrace(const PreparedTrace& trace) {
  TraceSummary summary;
  summary.events = static_cast<int64_t>(trace.steps().size());
  for (const PreparedTrace::Step& step : trace.steps()) {
    switch (step.op) {
      case PreparedTrace::Op::kAlloc:
        ++summary.allocs;
        break;
      case PreparedTrace::Op::kFree:
        ++summary.frees;
        break;
      case PreparedTrace::Op::kRecordedFailure:
        ++summary.failed_allocs;
        break;
    }
  }
  summary.live_at_end = summary.allocs - summary.frees;
  summary.peak_live_bytes = trace.peak_live_bytes();
  return summary;
}

absl::StatusOr<TraceSummary> SummarizeTrace(const Trace& trace) {
  absl::StatusOr<PreparedTrace> prepared = PreparedTrace::Prepare(trace);
  if (!prepared.ok()) return prepared.status();
  return SummarizeTrace(*prepared);
}

nlohmann::ordered_json TraceSummaryToJson(const TraceSummary& summary) {
  return {{"events", summary.events},
          {"allocs", summary.allocs},
          {"frees", summary.frees},
          {"failed_allocs", summary.failed_allocs},
          {"live_at_end", summary.live_at_end},
          {"peak_live_bytes", summary.peak_live_bytes}};
}

}  // namespace tensormem
