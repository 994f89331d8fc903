#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "tensormem/trace/trace_io.h"
#include "trace/trace_line_parser.h"

namespace tensormem {
namespace {

constexpr size_t kReadChunkBytes = size_t{1} << 20;
// The streaming reader's first read; each next one doubles up to
// kReadChunkBytes. A read zero-fills its chunk first, which for a small file
// cost more than parsing it.
constexpr size_t kFirstReadChunkBytes = size_t{64} << 10;
// No valid line comes near this; a longer one means the input is not a trace,
// and buffering it whole could exhaust memory.
constexpr size_t kMaxLineBytes = size_t{1} << 20;

// Calls `on_line` for every line of `text`, the last one with or without '\n'.
template <typename OnLine>
absl::Status ForEachLine(std::string_view text, OnLine on_line) {
  size_t position = 0;
  while (position < text.size()) {
    const void* newline =
        std::memchr(text.data() + position, '\n', text.size() - position);
    const size_t end = newline == nullptr
                           ? text.size()
                           : static_cast<const char*>(newline) - text.data();
    if (absl::Status status = on_line(text.substr(position, end - position));
        !status.ok()) {
      return status;
    }
    position = end + 1;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Trace> ParseTrace(std::string_view text,
                                 std::string_view source) {
  trace_internal::LineParser parser{std::string(source)};
  Trace trace;
  TraceEvent event;
  absl::Status status = ForEachLine(text, [&](std::string_view line) {
    bool has_event = false;
    absl::Status parsed = parser.Parse(line, event, has_event);
    if (has_event) {
      if (!parser.extra_keys().empty()) {
        trace.extra_keys.emplace_back(trace.events.size(),
                                      std::string(parser.extra_keys()));
      }
      trace.events.push_back(event);
    }
    return parsed;
  });
  if (!status.ok()) return status;
  trace.tags = parser.TakeTags();
  return trace;
}

namespace trace_internal {

// A file or stdin read through zlib, which passes uncompressed data through.
class GzipInput {
 public:
  ~GzipInput() {
    if (file_ != nullptr) gzclose(file_);
  }

  absl::Status Open(const std::string& path) {
    path_ = path;
    if (path == "-") {
      const int descriptor = dup(STDIN_FILENO);
      file_ = descriptor < 0 ? nullptr : gzdopen(descriptor, "rb");
    } else {
      file_ = gzopen(path.c_str(), "rb");
    }
    if (file_ == nullptr) {
      return absl::NotFoundError(
          absl::StrFormat("%s: cannot open: %s", path, std::strerror(errno)));
    }
    // zlib allocates this (and twice this for output) per file; reads of at
    // least twice this bypass it, so large files lose nothing.
    gzbuffer(file_, kFirstReadChunkBytes);
    return absl::OkStatus();
  }

  // Appends up to `count` bytes to `bytes`; returns how many (0 at the end).
  // `line` names where reading stopped in errors (0: no line).
  absl::StatusOr<size_t> ReadInto(std::string& bytes, size_t count,
                                  int64_t line) {
    const size_t kept = bytes.size();
    bytes.resize(kept + count);
    const int read =
        gzread(file_, bytes.data() + kept, static_cast<unsigned>(count));
    if (read < 0) {
      bytes.resize(kept);
      int code = 0;
      const char* message = gzerror(file_, &code);
      const std::string where =
          line > 0 ? absl::StrFormat("%s:%d", path_, line) : path_;
      return absl::DataLossError(
          absl::StrFormat("%s: read failed: %s", where,
                          code == Z_ERRNO ? std::strerror(errno) : message));
    }
    bytes.resize(kept + read);
    return static_cast<size_t>(read);
  }

  const std::string& path() const { return path_; }

  // The size of the streaming reader's next read: small at first, growing.
  size_t NextChunkBytes() {
    const size_t chunk = next_chunk_bytes_;
    next_chunk_bytes_ = std::min(kReadChunkBytes, 2 * next_chunk_bytes_);
    return chunk;
  }

 private:
  gzFile file_ = nullptr;
  std::string path_;
  size_t next_chunk_bytes_ = kFirstReadChunkBytes;
};

}  // namespace trace_internal

absl::StatusOr<std::unique_ptr<TraceReader>> TraceReader::Open(
    const std::string& path) {
  auto input = std::make_unique<trace_internal::GzipInput>();
  if (absl::Status status = input->Open(path); !status.ok()) return status;
  return std::unique_ptr<TraceReader>(new TraceReader(std::move(input), path));
}

TraceReader::TraceReader(std::unique_ptr<trace_internal::GzipInput> input,
                         std::string path)
    : input_(std::move(input)),
      parser_(std::make_unique<trace_internal::LineParser>(std::move(path))) {}

TraceReader::~TraceReader() = default;

const std::vector<std::string>& TraceReader::tags() const {
  return parser_->tags();
}
std::string_view TraceReader::extra_keys() const {
  return parser_->extra_keys();
}
int64_t TraceReader::line() const { return parser_->line(); }

absl::Status TraceReader::Refill() {
  buffer_.erase(0, position_);
  position_ = 0;
  absl::StatusOr<size_t> read =
      input_->ReadInto(buffer_, input_->NextChunkBytes(), parser_->line() + 1);
  if (!read.ok()) return read.status();
  if (*read == 0) at_end_of_input_ = true;
  return absl::OkStatus();
}

absl::StatusOr<bool> TraceReader::Next(TraceEvent& event) {
  while (true) {
    const void* newline = std::memchr(buffer_.data() + position_, '\n',
                                      buffer_.size() - position_);
    std::string_view line;
    if (newline != nullptr) {
      const size_t end = static_cast<const char*>(newline) - buffer_.data();
      line = std::string_view(buffer_).substr(position_, end - position_);
      position_ = end + 1;
    } else if (!at_end_of_input_) {
      if (buffer_.size() - position_ > kMaxLineBytes) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s:%d: line longer than %d bytes (not a trace?)", input_->path(),
            parser_->line() + 1, kMaxLineBytes));
      }
      if (absl::Status status = Refill(); !status.ok()) return status;
      continue;
    } else if (position_ < buffer_.size()) {
      line = std::string_view(buffer_).substr(position_);
      position_ = buffer_.size();
    } else {
      return false;
    }
    bool has_event = false;
    if (absl::Status status = parser_->Parse(line, event, has_event);
        !status.ok()) {
      return status;
    }
    if (has_event) return true;
  }
}

absl::StatusOr<std::string> ReadFileInflated(const std::string& path,
                                             size_t max_bytes) {
  trace_internal::GzipInput input;
  if (absl::Status status = input.Open(path); !status.ok()) return status;
  std::string bytes;
  while (bytes.size() < max_bytes) {
    absl::StatusOr<size_t> read = input.ReadInto(
        bytes, std::min(kReadChunkBytes, max_bytes - bytes.size()), 0);
    if (!read.ok()) return read.status();
    if (*read == 0) break;
  }
  return bytes;
}

absl::StatusOr<std::string> ReadWholeFileInflated(const std::string& path,
                                                  size_t max_bytes) {
  absl::StatusOr<std::string> bytes =
      ReadFileInflated(path, max_bytes == SIZE_MAX ? max_bytes : max_bytes + 1);
  if (bytes.ok() && bytes->size() > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s: larger than %d bytes once decompressed (a compression bomb, or "
        "an input too large to hold in memory)",
        path, max_bytes));
  }
  return bytes;
}

absl::StatusOr<Trace> ReadTrace(const std::string& path) {
  absl::StatusOr<std::unique_ptr<TraceReader>> reader = TraceReader::Open(path);
  if (!reader.ok()) return reader.status();
  Trace trace;
  TraceEvent event;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(event);
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (!(*reader)->extra_keys().empty()) {
      trace.extra_keys.emplace_back(trace.events.size(),
                                    std::string((*reader)->extra_keys()));
    }
    trace.events.push_back(event);
  }
  trace.tags = (*reader)->tags();
  return trace;
}

}  // namespace tensormem
