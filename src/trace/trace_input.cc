#include "tensormem/trace/trace_input.h"

#include <array>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem {
namespace {

constexpr std::array<std::pair<TraceFormat, std::string_view>, 4> kFormats = {{
    {TraceFormat::kTrace, "trace"},
    {TraceFormat::kRmm, "rmm"},
    {TraceFormat::kPytorch, "pytorch"},
    {TraceFormat::kBuffers, "buffers"},
}};

// The start of a file, inflated: enough to tell an RMM log from a buffer set
// by its header, or a pickle by its first opcode.
std::string FileStart(const std::string& path) {
  absl::StatusOr<std::string> start = ReadFileInflated(path, 4096);
  return start.ok() ? *std::move(start) : std::string();
}

absl::StatusOr<Trace> ReadBuffersAsTrace(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileInflated(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<BufferSet> set = ParseBufferSetCsv(*text, path);
  if (!set.ok()) return set.status();
  absl::StatusOr<Trace> trace = BufferSetToTrace(*set);
  if (!trace.ok()) {
    return absl::Status(trace.status().code(),
                        absl::StrCat(path, ": ", trace.status().message()));
  }
  return trace;
}

}  // namespace

std::string_view TraceFormatName(TraceFormat format) {
  for (const auto& [known, name] : kFormats) {
    if (known == format) return name;
  }
  return "unknown";
}

absl::StatusOr<TraceFormat> ParseTraceFormat(std::string_view name) {
  std::string names;
  for (const auto& [format, known] : kFormats) {
    if (known == name) return format;
    names += (names.empty() ? "" : ", ") + std::string(known);
  }
  return absl::InvalidArgumentError("unknown trace format '" +
                                    std::string(name) + "' (known: " + names +
                                    ")");
}

TraceFormat DetectTraceFormat(const std::string& path) {
  if (path == "-") return TraceFormat::kTrace;
  absl::string_view name = path;
  absl::ConsumeSuffix(&name, ".gz");
  if (absl::EndsWith(name, ".pickle") || absl::EndsWith(name, ".pkl")) {
    return TraceFormat::kPytorch;
  }
  if (absl::EndsWith(name, ".trace")) return TraceFormat::kTrace;
  const std::string start = FileStart(path);
  if (absl::EndsWith(name, ".csv")) {
    const absl::string_view header =
        absl::string_view(start).substr(0, start.find('\n'));
    return absl::StrContains(header, "Action") &&
                   absl::StrContains(header, "Pointer")
               ? TraceFormat::kRmm
               : TraceFormat::kBuffers;
  }
  // No telling extension: a pickle starts with the PROTO opcode.
  return !start.empty() && static_cast<uint8_t>(start[0]) == 0x80
             ? TraceFormat::kPytorch
             : TraceFormat::kTrace;
}

absl::StatusOr<TraceInput> ReadTraceInput(const std::string& path,
                                          const TraceInputOptions& options) {
  TraceInput input;
  input.format = options.format.value_or(DetectTraceFormat(path));
  absl::StatusOr<Trace> trace;
  switch (input.format) {
    case TraceFormat::kTrace:
      trace = ReadTrace(path);
      break;
    case TraceFormat::kRmm:
      trace = ReadRmmLog(path);
      break;
    case TraceFormat::kBuffers:
      trace = ReadBuffersAsTrace(path);
      break;
    case TraceFormat::kPytorch: {
      absl::StatusOr<PytorchImport> read =
          ReadPytorchSnapshot(path, {.device = options.device});
      if (!read.ok()) return read.status();
      trace = std::move(read->trace);
      read->trace = Trace();
      input.pytorch_details = *std::move(read);
      break;
    }
  }
  if (!trace.ok()) return trace.status();
  input.trace = *std::move(trace);
  return input;
}

}  // namespace tensormem
