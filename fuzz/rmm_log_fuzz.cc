// Fuzz target: the RMM logging CSV importer. Errors must name the input; an
// imported trace must convert to a buffer set or say why.
#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "fuzz_check.h"
#include "tensormem/trace/importers.h"
#include "tensormem/trace/trace_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensormem;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<Trace> trace = ParseRmmLog(text, "fuzz.csv");
  if (!trace.ok()) {
    FUZZ_CHECK(absl::StartsWith(trace.status().message(), "fuzz.csv"),
               "error does not name the input: %s",
               trace.status().ToString().c_str());
    return 0;
  }
  // What the importer produced is a valid trace: it formats and parses back.
  absl::StatusOr<Trace> again = ParseTrace(FormatTrace(*trace), "formatted");
  FUZZ_CHECK(again.ok(), "imported trace does not format/parse: %s",
             again.status().ToString().c_str());
  FUZZ_CHECK(again->events.size() == trace->events.size(), "events lost");
  (void)TraceToBufferSet(*trace);
  return 0;
}
