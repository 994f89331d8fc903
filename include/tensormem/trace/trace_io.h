// Reading and writing `.trace` files (docs/design.md §3.1, docs/traces.md).
//
// Whole traces in memory (ParseTrace, ReadTrace, WriteTrace) and, for traces
// too large for that, a streaming TraceReader / TraceWriter that hold only the
// set of live ids. Files whose name ends in `.gz` are read and written
// compressed; the reader also accepts uncompressed input under any name.
//
//   absl::StatusOr<Trace> trace = ReadTrace("bert.trace.gz");
//   if (!trace.ok()) return trace.status();  // "bert.trace.gz:12: free of ..."
//
//   TM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader,
//                       TraceReader::Open("huge.trace"));
//   TraceEvent event;
//   while (true) {
//     TM_ASSIGN_OR_RETURN(bool more, reader->Next(event));
//     if (!more) break;
//     ...
//   }
//
// Every error names the input and line: "path:line: what".
#ifndef TENSORMEM_TRACE_TRACE_IO_H_
#define TENSORMEM_TRACE_TRACE_IO_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tensormem/trace/trace.h"

namespace tensormem {

namespace trace_internal {
class GzipInput;
class LineParser;
class OutputSink;
}  // namespace trace_internal

// Parses trace text; `source` names it in errors.
absl::StatusOr<Trace> ParseTrace(std::string_view text,
                                 std::string_view source = "<input>");

// Reads a trace file (compressed when it is gzip data, whatever its name).
// "-" reads standard input.
absl::StatusOr<Trace> ReadTrace(const std::string& path);

// Writes `trace` with a `# tensormem-trace v1` header; gzip when `path` ends
// in ".gz", standard output when it is "-".
absl::Status WriteTrace(const Trace& trace, const std::string& path);

// The trace as text, as WriteTrace writes it.
std::string FormatTrace(const Trace& trace);

// Reads up to `max_bytes` of a file ("-" = standard input), inflating gzip
// data whatever the name: what the importers read RMM logs and snapshots with.
absl::StatusOr<std::string> ReadFileInflated(
    const std::string& path, size_t max_bytes = static_cast<size_t>(-1));

// Whole-file importers (RMM logs, PyTorch snapshots) refuse inputs larger than
// this once inflated: a small .gz can expand 1000x, and they hold it in memory.
inline constexpr size_t kMaxInflatedFileBytes = size_t{1} << 30;

// Reads a whole file like ReadFileInflated, or fails naming the path and the
// limit when it holds more than `max_bytes` bytes once inflated (memory stays
// within max_bytes + one read chunk).
absl::StatusOr<std::string> ReadWholeFileInflated(
    const std::string& path, size_t max_bytes = kMaxInflatedFileBytes);

// Reads a trace one event at a time, checking it as it goes.
class TraceReader {
 public:
  // Opens `path` ("-" = standard input); gzip data is inflated transparently.
  static absl::StatusOr<std::unique_ptr<TraceReader>> Open(
      const std::string& path);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // Stores the next event in `event` and returns true, or returns false at the
  // end of the input. A malformed line gives an error naming it.
  absl::StatusOr<bool> Next(TraceEvent& event);

  // Tags seen so far; TraceEvent::tag indexes this list (0 = no tag).
  const std::vector<std::string>& tags() const;
  // Unknown keys of the last event, as written; empty when it had none.
  std::string_view extra_keys() const;
  // The line number of the last event (1-based).
  int64_t line() const;

 private:
  TraceReader(std::unique_ptr<trace_internal::GzipInput> input,
              std::string path);
  absl::Status Refill();

  std::unique_ptr<trace_internal::GzipInput> input_;
  std::unique_ptr<trace_internal::LineParser> parser_;
  std::string buffer_;
  size_t position_ = 0;  // start of the unread part of buffer_
  bool at_end_of_input_ = false;
};

// Writes trace events as they happen. Output is buffered; call Close() to
// flush and learn whether every write reached the file.
class TraceWriter {
 public:
  // Creates `path` ("-" = standard output), gzip-compressed when it ends in
  // ".gz". Writes the header line.
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Open(
      const std::string& path);
  // Writes to an open stream the caller keeps ownership of.
  static std::unique_ptr<TraceWriter> ToStream(FILE* stream,
                                               std::string name = "<stream>");
  ~TraceWriter();  // closes, ignoring errors; call Close() to see them
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Appends one event line. `tag` must not contain whitespace (it is written
  // with spaces replaced by '_'); `extra_keys` is appended verbatim.
  void Write(const TraceEvent& event, std::string_view tag = {},
             std::string_view extra_keys = {});
  // Hands buffered lines to the file.
  absl::Status Flush();
  // Flushes and closes the file. Further writes are dropped.
  absl::Status Close();

 private:
  explicit TraceWriter(std::unique_ptr<trace_internal::OutputSink> sink);

  std::unique_ptr<trace_internal::OutputSink> sink_;
  std::string buffer_;
  absl::Status status_;
};

}  // namespace tensormem

#endif  // TENSORMEM_TRACE_TRACE_IO_H_
