#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem {
namespace trace_internal {

// Where a TraceWriter's bytes go: a stdio stream or a gzip file.
class OutputSink {
 public:
  explicit OutputSink(std::string name) : name_(std::move(name)) {}
  virtual ~OutputSink() = default;
  virtual absl::Status Write(std::string_view data) = 0;
  virtual absl::Status Close() = 0;

 protected:
  absl::Status WriteError(const char* what) const {
    return absl::DataLossError(
        absl::StrFormat("%s: write failed: %s", name_, what));
  }

 private:
  std::string name_;
};

}  // namespace trace_internal
namespace {

constexpr size_t kFlushBytes = size_t{1} << 20;
constexpr std::string_view kHeader = "# tensormem-trace v1\n";

class StdioSink : public trace_internal::OutputSink {
 public:
  StdioSink(FILE* stream, bool owned, std::string name)
      : OutputSink(std::move(name)), stream_(stream), owned_(owned) {}
  ~StdioSink() override { (void)Close(); }

  absl::Status Write(std::string_view data) override {
    if (stream_ == nullptr) return WriteError("already closed");
    if (std::fwrite(data.data(), 1, data.size(), stream_) != data.size()) {
      return WriteError(std::strerror(errno));
    }
    return absl::OkStatus();
  }
  absl::Status Close() override {
    if (stream_ == nullptr) return absl::OkStatus();
    const bool ok =
        owned_ ? std::fclose(stream_) == 0 : std::fflush(stream_) == 0;
    stream_ = nullptr;
    return ok ? absl::OkStatus() : WriteError(std::strerror(errno));
  }

 private:
  FILE* stream_;
  bool owned_;
};

class GzipSink : public trace_internal::OutputSink {
 public:
  GzipSink(gzFile file, std::string name)
      : OutputSink(std::move(name)), file_(file) {}
  ~GzipSink() override { (void)Close(); }

  absl::Status Write(std::string_view data) override {
    if (file_ == nullptr) return WriteError("already closed");
    if (data.empty()) return absl::OkStatus();
    if (gzwrite(file_, data.data(), static_cast<unsigned>(data.size())) <= 0) {
      int code = 0;
      const char* message = gzerror(file_, &code);
      return WriteError(code == Z_ERRNO ? std::strerror(errno) : message);
    }
    return absl::OkStatus();
  }
  absl::Status Close() override {
    if (file_ == nullptr) return absl::OkStatus();
    const int result = gzclose(file_);
    file_ = nullptr;
    return result == Z_OK ? absl::OkStatus() : WriteError("gzclose failed");
  }

 private:
  gzFile file_;
};

template <typename Integer>
void AppendInteger(std::string& out, Integer value) {
  char digits[24];
  auto [end, error] = std::to_chars(digits, digits + sizeof(digits), value);
  out.append(digits, end);
}

void AppendEvent(std::string& out, const TraceEvent& event,
                 std::string_view tag, std::string_view extra_keys) {
  out.push_back(event.op == TraceOp::kAlloc ? 'a' : 'f');
  out.push_back(' ');
  AppendInteger(out, event.id);
  if (event.op == TraceOp::kAlloc) {
    out.push_back(' ');
    AppendInteger(out, event.bytes);
  }
  if (event.alignment != 0) {
    out.append(" align=");
    AppendInteger(out, event.alignment);
  }
  if (event.stream != 0) {
    out.append(" stream=");
    AppendInteger(out, event.stream);
  }
  if (event.time_ns != TraceEvent::kNoTime) {
    out.append(" t=");
    AppendInteger(out, event.time_ns);
  }
  if (!tag.empty()) {
    out.append(" tag=");
    for (char c : tag) {
      out.push_back(c == ' ' || c == '\t' || c == '\n' || c == '\r' ? '_' : c);
    }
  }
  if (event.failed) out.append(" failed=1");
  if (!extra_keys.empty()) {
    out.push_back(' ');
    out.append(extra_keys);
  }
  out.push_back('\n');
}

// Calls `emit(event, tag, extra_keys)` for every event of `trace`.
template <typename Emit>
void ForEachEvent(const Trace& trace, Emit emit) {
  size_t next_extra = 0;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& event = trace.events[i];
    std::string_view extra;
    while (next_extra < trace.extra_keys.size() &&
           trace.extra_keys[next_extra].first < i) {
      ++next_extra;
    }
    if (next_extra < trace.extra_keys.size() &&
        trace.extra_keys[next_extra].first == i) {
      extra = trace.extra_keys[next_extra].second;
    }
    const std::string_view tag = event.tag < trace.tags.size()
                                     ? std::string_view(trace.tags[event.tag])
                                     : std::string_view();
    emit(event, tag, extra);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Open(
    const std::string& path) {
  std::unique_ptr<trace_internal::OutputSink> sink;
  if (path == "-") {
    sink = std::make_unique<StdioSink>(stdout, /*owned=*/false, "<stdout>");
  } else if (absl::EndsWith(path, ".gz")) {
    // Level 1: traces are written while programs run, and it is about 5x
    // faster than the default level for files about 9% larger.
    gzFile file = gzopen(path.c_str(), "wb1");
    if (file == nullptr) {
      return absl::PermissionDeniedError(
          absl::StrFormat("%s: cannot create: %s", path, std::strerror(errno)));
    }
    sink = std::make_unique<GzipSink>(file, path);
  } else {
    FILE* stream = std::fopen(path.c_str(), "wb");
    if (stream == nullptr) {
      return absl::PermissionDeniedError(
          absl::StrFormat("%s: cannot create: %s", path, std::strerror(errno)));
    }
    sink = std::make_unique<StdioSink>(stream, /*owned=*/true, path);
  }
  return std::unique_ptr<TraceWriter>(new TraceWriter(std::move(sink)));
}

std::unique_ptr<TraceWriter> TraceWriter::ToStream(FILE* stream,
                                                   std::string name) {
  return std::unique_ptr<TraceWriter>(new TraceWriter(
      std::make_unique<StdioSink>(stream, /*owned=*/false, std::move(name))));
}

TraceWriter::TraceWriter(std::unique_ptr<trace_internal::OutputSink> sink)
    : sink_(std::move(sink)), buffer_(kHeader) {}

TraceWriter::~TraceWriter() { (void)Close(); }

void TraceWriter::Write(const TraceEvent& event, std::string_view tag,
                        std::string_view extra_keys) {
  if (sink_ == nullptr) return;
  AppendEvent(buffer_, event, tag, extra_keys);
  if (buffer_.size() >= kFlushBytes) (void)Flush();
}

absl::Status TraceWriter::Flush() {
  if (sink_ != nullptr && status_.ok() && !buffer_.empty()) {
    status_ = sink_->Write(buffer_);
  }
  buffer_.clear();
  return status_;
}

absl::Status TraceWriter::Close() {
  if (sink_ == nullptr) return status_;
  (void)Flush();
  absl::Status closed = sink_->Close();
  sink_.reset();
  if (status_.ok()) status_ = closed;
  return status_;
}

std::string FormatTrace(const Trace& trace) {
  std::string out(kHeader);
  ForEachEvent(trace, [&](const TraceEvent& event, std::string_view tag,
                          std::string_view extra) {
    AppendEvent(out, event, tag, extra);
  });
  return out;
}

absl::Status WriteTrace(const Trace& trace, const std::string& path) {
  absl::StatusOr<std::unique_ptr<TraceWriter>> writer = TraceWriter::Open(path);
  if (!writer.ok()) return writer.status();
  ForEachEvent(trace, [&](const TraceEvent& event, std::string_view tag,
                          std::string_view extra) {
    (*writer)->Write(event, tag, extra);
  });
  return (*writer)->Close();
}

}  // namespace tensormem
