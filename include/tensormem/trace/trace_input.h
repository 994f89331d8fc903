// Reading any workload file as a trace: `.trace` files, RMM logs, PyTorch
// memory snapshots and buffer sets, with the format told by the name (and, for
// `.csv` and unknown names, by the first bytes).
//
//   TM_ASSIGN_OR_RETURN(TraceInput input, ReadTraceInput("snap.pickle"));
//   // input.format == TraceFormat::kPytorch; input.trace holds the events.
#ifndef TENSORMEM_TRACE_TRACE_INPUT_H_
#define TENSORMEM_TRACE_TRACE_INPUT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "tensormem/trace/importers.h"
#include "tensormem/trace/trace.h"

namespace tensormem {

enum class TraceFormat {
  kTrace,    // tensormem's `.trace` text, maybe gzip-compressed
  kRmm,      // RMM logging CSV
  kPytorch,  // PyTorch memory snapshot pickle
  kBuffers,  // buffer set CSV, each buffer an alloc and a free
};

// "trace", "rmm", "pytorch", "buffers".
std::string_view TraceFormatName(TraceFormat format);
// The inverse of TraceFormatName; InvalidArgument naming the known formats.
absl::StatusOr<TraceFormat> ParseTraceFormat(std::string_view name);

// The format of `path` ("-" is a trace on standard input): `.pickle`/`.pkl`
// are snapshots, `.trace` traces, `.csv` an RMM log when its header has Action
// and Pointer columns and a buffer set otherwise; other names are snapshots
// when the data starts with a pickle's PROTO opcode, else traces.
TraceFormat DetectTraceFormat(const std::string& path);

struct TraceInput {
  TraceFormat format = TraceFormat::kTrace;
  Trace trace;
  // PyTorch snapshots only: what the importer reports beside the trace.
  std::optional<PytorchImport> pytorch_details{};  // its `trace` is left empty
};

struct TraceInputOptions {
  std::optional<TraceFormat> format{};  // unset: DetectTraceFormat
  int device = 0;                       // of a PyTorch snapshot
};

// Reads `path` in its format. Errors name the file (and line or entry).
absl::StatusOr<TraceInput> ReadTraceInput(
    const std::string& path, const TraceInputOptions& options = {});

}  // namespace tensormem

#endif  // TENSORMEM_TRACE_TRACE_INPUT_H_
