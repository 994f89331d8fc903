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

}  // namespace

absl::StatusOr<Trace> ParseRmmLog(std::string_view text,
                                  std::string_view source) {
  Trace trace;
  std::optional<Columns> columns;
  trace_internal::StreamIndex streams;
  absl::flat_hash_map<uint64_t, uint64_t> live;  // pointer -> id
  uint64_t next_id = 0;
  std::optional<int64_t> first_time, previous_time;
  int64_t day_offset = 0;  // the log's clock has no date: count midnights
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
      continue;
    }
    if (fields.size() != columns->width) {
      return RowError(source, line,
                      absl::StrFormat("expected %d fields, found %d",
                                      columns->width, fields.size()));
    }
    auto field = [&](int column) {
      const absl::string_view value =
          absl::StripAsciiWhitespace(fields[column]);
      return std::string_view(value.data(), value.size());
    };
    const std::string_view action = field(columns->action);
    const std::optional<uint64_t> pointer =
        ParseHandle(field(columns->pointer));
    if (!pointer) {
      return RowError(
          source, line,
          absl::StrFormat("bad pointer '%s'", fields[columns->pointer]));
    }
    uint64_t size = 0;
    const std::string_view size_text = field(columns->size);
    auto [end, error] = std::from_chars(
        size_text.data(), size_text.data() + size_text.size(), size);
    if (error != std::errc() || end != size_text.data() + size_text.size() ||
        size_text.empty()) {
      return RowError(source, line,
                      absl::StrFormat("bad size '%s'", fields[columns->size]));
    }
    TraceEvent event;
    if (columns->stream >= 0) {
      const std::optional<uint64_t> handle =
          ParseHandle(field(columns->stream));
      if (!handle) {
        return RowError(
            source, line,
            absl::StrFormat("bad stream '%s'", fields[columns->stream]));
      }
      event.stream = streams.IndexOf(*handle);
    }
    if (columns->time >= 0) {
      std::optional<int64_t> time = ParseTimeOfDay(field(columns->time));
      if (!time) {
        return RowError(
            source, line,
            absl::StrFormat("bad time '%s' (expected HH:MM:SS.ffffff)",
                            fields[columns->time]));
      }
      // Rows are in order, so a clock that goes back by hours crossed midnight.
      if (previous_time &&
          *time + day_offset < *previous_time - kNanosPerDay / 2) {
        day_offset += kNanosPerDay;
      }
      *time += day_offset;
      previous_time = *time;
      if (!first_time) first_time = *time;
      event.time_ns = std::max<int64_t>(0, *time - *first_time);
    }
    if (action == "allocate" || action == "allocate failure") {
      event.op = TraceOp::kAlloc;
      event.id = next_id++;
      event.bytes = size;
      event.failed = action == "allocate failure";
      if (!event.failed && !live.try_emplace(*pointer, event.id).second) {
        return RowError(
            source, line,
            absl::StrFormat(
                "allocate at pointer 0x%x, which is already allocated",
                *pointer));
      }
    } else if (action == "free") {
      auto it = live.find(*pointer);
      if (it == live.end()) {
        return RowError(
            source, line,
            absl::StrFormat("free of pointer 0x%x, which is not allocated",
                            *pointer));
      }
      event.op = TraceOp::kFree;
      event.id = it->second;
      live.erase(it);
    } else {
      return RowError(
          source, line,
          absl::StrFormat("unknown action '%s' (expected allocate, free or "
                          "allocate failure)",
                          fields[columns->action]));
    }
    trace.events.push_back(event);
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
