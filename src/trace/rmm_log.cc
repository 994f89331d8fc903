#include <charconv>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "tensormem/trace/importers.h"
#include "tensormem/trace/trace_io.h"
#include "trace/stream_index.h"

namespace tensormem {
namespace {

constexpr int64_t kNanosPerDay = int64_t{86400} * 1000 * 1000 * 1000;

struct Columns {
  int action = -1, pointer = -1, size = -1, stream = -1, time = -1;
  size_t width = 0;
};

absl::Status RowError(std::string_view source, int line,
                      std::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s:%d: %s", absl::string_view(source.data(), source.size()), line,
      absl::string_view(what.data(), what.size())));
}

// "0x7f00", "7f00" with a hex letter, "(nil)" (= 0) or decimal digits.
std::optional<uint64_t> ParseHandle(std::string_view text) {
  if (text == "(nil)") return 0;
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
    base = 16;
  } else if (text.find_first_of("abcdefABCDEF") != std::string_view::npos) {
    base = 16;
  }
  uint64_t value = 0;
  auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (error != std::errc() || end != text.data() + text.size() ||
      text.empty()) {
    return std::nullopt;
  }
  return value;
}

// "HH:MM:SS.ffffff" (any number of fraction digits, up to 9 kept) -> ns.
std::optional<int64_t> ParseTimeOfDay(std::string_view text) {
  int hours = 0, minutes = 0, seconds = 0;
  const std::vector<absl::string_view> parts =
      absl::StrSplit(absl::string_view(text.data(), text.size()), ':');
  if (parts.size() != 3) return std::nullopt;
  auto parse = [](absl::string_view field, int& value) {
    auto [end, error] =
        std::from_chars(field.data(), field.data() + field.size(), value);
    return error == std::errc() && end == field.data() + field.size() &&
           !field.empty();
  };
  const size_t dot = parts[2].find('.');
  const absl::string_view whole = parts[2].substr(0, dot);
  if (!parse(parts[0], hours) || !parse(parts[1], minutes) ||
      !parse(whole, seconds)) {
    return std::nullopt;
  }
  int64_t fraction_ns = 0;
  if (dot != absl::string_view::npos) {
    const absl::string_view fraction = parts[2].substr(dot + 1);
    if (fraction.empty()) return std::nullopt;
    int64_t scale = 100000000;
    for (char c : fraction) {
      if (c < '0' || c > '9') return std::nullopt;
      fraction_ns += (c - '0') * scale;
      scale /= 10;
    }
  }
  if (hours > 23 || minutes > 59 || seconds > 60) return std::nullopt;
  return ((int64_t{hours} * 60 + minutes) * 60 + seconds) * 1000000000 +
         fraction_ns;
}

absl::StatusOr<Columns> ParseHeader(
    const std::vector<absl::string_view>& fields, std::string_view source,
    int line) {
  Columns columns;
  columns.width = fields.size();
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string name =
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(fields[i]));
    if (name == "action") columns.action = i;
    if (name == "pointer") columns.pointer = i;
    if (name == "size") columns.size = i;
    if (name == "stream") columns.stream = i;
    if (name == "time") columns.time = i;
  }
  if (columns.action < 0 || columns.pointer < 0 || columns.size < 0) {
    return RowError(source, line,
                    "header must name Action, Pointer and Size "
                    "(RMM log: Thread,Time,Action,Pointer,Size,Stream)");
  }
  return columns;
}

// Turns the rows after the header into events: fields, then stream and time,
// then the action against the live pointers.
class RowReader {
 public:
  RowReader(const Columns& columns, std::string_view source, Trace& trace)
      : columns_(columns), source_(source), trace_(trace) {}

  absl::Status Read(const std::vector<absl::string_view>& fields, int line) {
    fields_ = &fields;
    line_ = line;
    const std::optional<uint64_t> pointer =
        ParseHandle(Field(columns_.pointer));
    if (!pointer) return Bad("pointer", columns_.pointer);
    uint64_t size = 0;
    const std::string_view size_text = Field(columns_.size);
    auto [end, error] = std::from_chars(
        size_text.data(), size_text.data() + size_text.size(), size);
    if (error != std::errc() || end != size_text.data() + size_text.size() ||
        size_text.empty()) {
      return Bad("size", columns_.size);
    }
    TraceEvent event;
    if (absl::Status timed = SetStreamAndTime(event); !timed.ok()) {
      return timed;
    }
    if (absl::Status applied = ApplyAction(event, *pointer, size);
        !applied.ok()) {
      return applied;
    }
    trace_.events.push_back(event);
    return absl::OkStatus();
  }

 private:
  std::string_view Field(int column) const {
    const absl::string_view value =
        absl::StripAsciiWhitespace((*fields_)[column]);
    return std::string_view(value.data(), value.size());
  }

  absl::Status Bad(absl::string_view what, int column,
                   absl::string_view expected = "") const {
    return RowError(
        source_, line_,
        absl::StrFormat("bad %s '%s'%s", what, (*fields_)[column], expected));
  }

  absl::Status SetStreamAndTime(TraceEvent& event) {
    if (columns_.stream >= 0) {
      const std::optional<uint64_t> handle =
          ParseHandle(Field(columns_.stream));
      if (!handle) return Bad("stream", columns_.stream);
      event.stream = streams_.IndexOf(*handle);
    }
    if (columns_.time < 0) return absl::OkStatus();
    std::optional<int64_t> time = ParseTimeOfDay(Field(columns_.time));
    if (!time) {
      return Bad("time", columns_.time, " (expected HH:MM:SS.ffffff)");
    }
    // Rows are in order, so a clock that goes back by hours crossed midnight.
    if (previous_time_ &&
        *time + day_offset_ < *previous_time_ - kNanosPerDay / 2) {
      day_offset_ += kNanosPerDay;
    }
    *time += day_offset_;
    previous_time_ = *time;
    if (!first_time_) first_time_ = *time;
    event.time_ns = std::max<int64_t>(0, *time - *first_time_);
    return absl::OkStatus();
  }

  absl::Status ApplyAction(TraceEvent& event, uint64_t pointer, uint64_t size) {
    const std::string_view action = Field(columns_.action);
    if (action == "allocate" || action == "allocate failure") {
      event.op = TraceOp::kAlloc;
      event.id = next_id_++;
      event.bytes = size;
      event.failed = action == "allocate failure";
      if (!event.failed && !live_.try_emplace(pointer, event.id).second) {
        return RowError(
            source_, line_,
            absl::StrFormat(
                "allocate at pointer 0x%x, which is already allocated",
                pointer));
      }
      return absl::OkStatus();
    }
    if (action == "free") {
      auto it = live_.find(pointer);
      if (it == live_.end()) {
        return RowError(
            source_, line_,
            absl::StrFormat("free of pointer 0x%x, which is not allocated",
                            pointer));
      }
      event.op = TraceOp::kFree;
      event.id = it->second;
      live_.erase(it);
      return absl::OkStatus();
    }
    return RowError(source_, line_,
                    absl::StrFormat("unknown action '%s' (expected allocate, "
                                    "free or allocate failure)",
                                    (*fields_)[columns_.action]));
  }

  const Columns& columns_;
  std::string_view source_;
  Trace& trace_;
  const std::vector<absl::string_view>* fields_ = nullptr;
  int line_ = 0;
  trace_internal::StreamIndex streams_;
  absl::flat_hash_map<uint64_t, uint64_t> live_;  // pointer -> id
  uint64_t next_id_ = 0;
  std::optional<int64_t> first_time_, previous_time_;
  int64_t day_offset_ = 0;  // the log's clock has no date: count midnights
};

}  // namespace

absl::StatusOr<Trace> ParseRmmLog(std::string_view text,
                                  std::string_view source) {
  Trace trace;
  std::optional<Columns> columns;
  std::optional<RowReader> rows;
  int line = 0;
  for (absl::string_view raw :
       absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line;
    const absl::string_view row = absl::StripAsciiWhitespace(raw);
    if (row.empty()) continue;
    const std::vector<absl::string_view> fields = absl::StrSplit(row, ',');
    if (!columns) {
      absl::StatusOr<Columns> header = ParseHeader(fields, source, line);
      if (!header.ok()) return header.status();
      columns = *header;
      rows.emplace(*columns, source, trace);
      continue;
    }
    if (fields.size() != columns->width) {
      return RowError(source, line,
                      absl::StrFormat("expected %d fields, found %d",
                                      columns->width, fields.size()));
    }
    if (absl::Status read = rows->Read(fields, line); !read.ok()) return read;
  }
  if (!columns) return RowError(source, line, "no header row (empty file)");
  return trace;
}

absl::StatusOr<Trace> ReadRmmLog(const std::string& path) {
  absl::StatusOr<std::string> text = ReadWholeFileInflated(path);
  if (!text.ok()) return text.status();
  return ParseRmmLog(*text, path);
}

}  // namespace tensormem
