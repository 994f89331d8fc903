#include <unistd.h>
#include <zlib.h>

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

struct TraceReader::Input {
  gzFile file = nullptr;
  std::string path;
  ~Input() {
    if (file != nullptr) gzclose(file);
  }
};

absl::StatusOr<std::unique_ptr<TraceReader>> TraceReader::Open(
    const std::string& path) {
  auto input = std::make_unique<Input>();
  input->path = path;
  if (path == "-") {
    const int descriptor = dup(STDIN_FILENO);
    input->file = descriptor < 0 ? nullptr : gzdopen(descriptor, "rb");
  } else {
    input->file = gzopen(path.c_str(), "rb");
  }
  if (input->file == nullptr) {
    return absl::NotFoundError(
        absl::StrFormat("%s: cannot open: %s", path, std::strerror(errno)));
  }
  gzbuffer(input->file, kReadChunkBytes);
  return std::unique_ptr<TraceReader>(new TraceReader(std::move(input), path));
}

TraceReader::TraceReader(std::unique_ptr<Input> input, std::string path)
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
  const size_t kept = buffer_.size();
  buffer_.resize(kept + kReadChunkBytes);
  const int read = gzread(input_->file, buffer_.data() + kept,
                          static_cast<unsigned>(kReadChunkBytes));
  if (read < 0) {
    int code = 0;
    const char* message = gzerror(input_->file, &code);
    buffer_.resize(kept);
    return absl::DataLossError(absl::StrFormat(
        "%s:%d: read failed: %s", input_->path, parser_->line() + 1,
        code == Z_ERRNO ? std::strerror(errno) : message));
  }
  buffer_.resize(kept + read);
  if (read == 0) at_end_of_input_ = true;
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
        return absl::InvalidArgumentError(
            absl::StrFormat("%s:%d: line longer than %d bytes (not a trace?)",
                            input_->path, parser_->line() + 1, kMaxLineBytes));
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
