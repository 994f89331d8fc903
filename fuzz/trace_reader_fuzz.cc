// Fuzz target: the trace reader, whole-text (ParseTrace) and streaming
// (TraceReader over plain or gzip bytes, through an in-memory file).
//
// Checks beyond "no crash": the two readers agree on plain text (same
// success, same events), every error names the input and a line, and a parsed
// trace survives FormatTrace -> ParseTrace unchanged.
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "byte_reader.h"
#include "fuzz_check.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem {
namespace {

// An in-memory file with `bytes`, openable by path while it lives.
class MemoryFile {
 public:
  explicit MemoryFile(std::string_view bytes)
      : descriptor_(memfd_create("trace_fuzz", 0)) {
    FUZZ_CHECK(descriptor_ >= 0, "memfd_create failed");
    for (size_t written = 0; written < bytes.size();) {
      const ssize_t n =
          write(descriptor_, bytes.data() + written, bytes.size() - written);
      FUZZ_CHECK(n > 0, "write to memfd failed");
      written += n;
    }
  }
  ~MemoryFile() { close(descriptor_); }
  std::string path() const {
    return absl::StrCat("/proc/self/fd/", descriptor_);
  }

 private:
  int descriptor_;
};

std::string Gzip(std::string_view text) {
  uLongf length = compressBound(text.size()) + 32;
  std::string out(length, '\0');
  z_stream stream{};
  FUZZ_CHECK(deflateInit2(&stream, 1, Z_DEFLATED, 15 + 16, 8,
                          Z_DEFAULT_STRATEGY) == Z_OK,
             "deflateInit2");
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = text.size();
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = out.size();
  FUZZ_CHECK(deflate(&stream, Z_FINISH) == Z_STREAM_END, "deflate");
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

absl::StatusOr<Trace> ReadStreaming(std::string_view bytes) {
  MemoryFile file(bytes);
  return ReadTrace(file.path());
}

bool SameEvents(const Trace& a, const Trace& b) {
  if (a.events.size() != b.events.size() || a.tags != b.tags) return false;
  for (size_t i = 0; i < a.events.size(); ++i) {
    const TraceEvent& x = a.events[i];
    const TraceEvent& y = b.events[i];
    if (x.op != y.op || x.failed != y.failed || x.alignment != y.alignment ||
        x.tag != y.tag || x.stream != y.stream || x.id != y.id ||
        x.bytes != y.bytes || x.time_ns != y.time_ns) {
      return false;
    }
  }
  return true;
}

void CheckErrorNamesLine(const absl::Status& status, std::string_view source) {
  FUZZ_CHECK(absl::StartsWith(status.message(), std::string(source) + ":"),
             "error does not name the input: %s",
             std::string(status.message()).c_str());
}

}  // namespace
}  // namespace tensormem

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensormem;
  fuzz::ByteReader reader(data, size);
  const uint8_t mode = reader.Byte() % 3;
  const std::string_view text = reader.Rest();
  if (mode == 2) {  // arbitrary bytes through the streaming reader (bad gzip)
    absl::StatusOr<Trace> trace = ReadStreaming(text);
    if (!trace.ok())
      FUZZ_CHECK(!trace.status().message().empty(), "empty error");
    return 0;
  }
  absl::StatusOr<Trace> parsed = ParseTrace(text, "fuzz.trace");
  if (!parsed.ok()) CheckErrorNamesLine(parsed.status(), "fuzz.trace");
  // Text that happens to start like gzip is inflated by the streaming reader.
  if (!text.starts_with("\x1f\x8b")) {
    absl::StatusOr<Trace> streamed =
        ReadStreaming(mode == 1 ? Gzip(text) : std::string(text));
    FUZZ_CHECK(streamed.ok() == parsed.ok(), "readers disagree: %s vs %s",
               parsed.status().ToString().c_str(),
               streamed.status().ToString().c_str());
    if (parsed.ok()) {
      FUZZ_CHECK(SameEvents(*parsed, *streamed), "readers read other events");
    }
  }
  if (!parsed.ok()) return 0;
  absl::StatusOr<Trace> again = ParseTrace(FormatTrace(*parsed), "formatted");
  FUZZ_CHECK(again.ok(), "formatted trace does not parse: %s",
             again.status().ToString().c_str());
  FUZZ_CHECK(SameEvents(*parsed, *again), "format/parse changed the trace");
  return 0;
}
