#include "tensormem/plan/buffer_set.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace tensormem {
namespace {

// Column positions of one header; -1 where absent.
struct Columns {
  int id = -1, lower = -1, upper = -1, first_task = -1, last_task = -1,
      size = -1, offset = -1;
};

absl::Status RowError(std::string_view source, int line,
                      std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s:%d: %s", source, line, what));
}

// Where the position of column `name` goes; nullptr for unknown columns.
int* ColumnSlot(Columns& columns, std::string_view name) {
  static constexpr std::pair<std::string_view, int Columns::*> kNames[] = {
      {"id", &Columns::id},
      {"lower", &Columns::lower},
      {"upper", &Columns::upper},
      {"first_task", &Columns::first_task},
      {"last_task", &Columns::last_task},
      {"size", &Columns::size},
      {"offset", &Columns::offset}};
  for (const auto& [known, member] : kNames) {
    if (known == name) return &(columns.*member);
  }
  return nullptr;
}

absl::StatusOr<Columns> ParseHeader(const std::vector<absl::string_view>& names,
                                    std::string_view source) {
  Columns columns;
  for (int i = 0; i < static_cast<int>(names.size()); ++i) {
    const std::string name =
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(names[i]));
    int* slot = ColumnSlot(columns, name);
    if (slot == nullptr) continue;  // unknown columns are ignored
    if (*slot != -1)
      return RowError(source, 1,
                      absl::StrFormat("column '%s' appears twice", name));
    *slot = i;
  }
  const bool half_open = columns.lower != -1 && columns.upper != -1;
  const bool closed = columns.first_task != -1 && columns.last_task != -1;
  if (columns.size == -1 || half_open == closed) {
    return RowError(
        source, 1,
        "header must name size and either lower,upper (half-open) or "
        "first_task,last_task (closed)");
  }
  if (half_open && columns.id == -1)
    return RowError(source, 1, "header must name id");
  return columns;
}

absl::StatusOr<int64_t> ParseField(const std::vector<absl::string_view>& fields,
                                   int column, std::string_view name,
                                   std::string_view source, int line) {
  const absl::string_view text = absl::StripAsciiWhitespace(fields[column]);
  int64_t value;
  if (!absl::SimpleAtoi(text, &value) || value < 0) {
    return RowError(
        source, line,
        absl::StrFormat("%s '%s' is not a non-negative integer", name, text));
  }
  return value;
}

// Reads the rows after the header into a set, one step per column group.
class RowParser {
 public:
  RowParser(const Columns& columns, std::string_view source, BufferSet& set)
      : columns_(columns), source_(source), set_(set) {}

  absl::Status Parse(const std::vector<absl::string_view>& fields, int line) {
    fields_ = &fields;
    line_ = line;
    Buffer buffer;
    buffer.id = set_.buffers.size();
    if (columns_.id != -1) {
      if (absl::Status id = ParseId(buffer); !id.ok()) return id;
    }
    absl::StatusOr<int64_t> size = Field(columns_.size, "size");
    if (!size.ok()) return size.status();
    buffer.size = *size;
    if (absl::Status lifetime = ParseLifetime(buffer); !lifetime.ok()) {
      return lifetime;
    }
    // An empty offset is a buffer without one (as FormatBufferSetCsv writes
    // a set placed in part).
    if (columns_.offset != -1 &&
        !absl::StripAsciiWhitespace((*fields_)[columns_.offset]).empty()) {
      absl::StatusOr<int64_t> offset = Field(columns_.offset, "offset");
      if (!offset.ok()) return offset.status();
      buffer.offset = *offset;
    }
    if (!ids_.insert(buffer.id).second) {
      return RowError(source_, line_,
                      absl::StrFormat("duplicate id %d", buffer.id));
    }
    set_.buffers.push_back(buffer);
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<int64_t> Field(int column, std::string_view name) const {
    return ParseField(*fields_, column, name, source_, line_);
  }

  // Ids are all numbers or all text (kept in set.names), decided by the first
  // data row.
  absl::Status ParseId(Buffer& buffer) {
    const absl::string_view id_text =
        absl::StripAsciiWhitespace((*fields_)[columns_.id]);
    if (set_.buffers.empty()) {
      textual_ids_ = !absl::SimpleAtoi(id_text, &buffer.id);
    }
    if (!textual_ids_) {
      absl::StatusOr<int64_t> id = Field(columns_.id, "id");
      if (!id.ok()) return id.status();
      buffer.id = *id;
      return absl::OkStatus();
    }
    if (id_text.empty()) return RowError(source_, line_, "empty id");
    if (!names_.insert(std::string(id_text)).second) {
      return RowError(source_, line_,
                      absl::StrFormat("duplicate id %s", id_text));
    }
    set_.names.emplace_back(id_text);
    return absl::OkStatus();
  }

  // lower,upper as given, or first_task,last_task made half-open.
  absl::Status ParseLifetime(Buffer& buffer) const {
    const bool half_open = set_.convention == IntervalConvention::kHalfOpen;
    absl::StatusOr<int64_t> from =
        half_open ? Field(columns_.lower, "lower")
                  : Field(columns_.first_task, "first_task");
    if (!from.ok()) return from.status();
    absl::StatusOr<int64_t> to = half_open
                                     ? Field(columns_.upper, "upper")
                                     : Field(columns_.last_task, "last_task");
    if (!to.ok()) return to.status();
    if (half_open && *to <= *from) {
      return RowError(
          source_, line_,
          absl::StrFormat("buffer %d: upper %d must exceed lower %d", buffer.id,
                          *to, *from));
    }
    if (!half_open && (*from > *to || *to == INT64_MAX)) {
      return RowError(
          source_, line_,
          absl::StrFormat("buffer %d: first_task %d is after last_task %d",
                          buffer.id, *from, *to));
    }
    buffer.lower = *from;
    buffer.upper = half_open ? *to : *to + 1;
    return absl::OkStatus();
  }

  const Columns& columns_;
  std::string_view source_;
  BufferSet& set_;
  const std::vector<absl::string_view>* fields_ = nullptr;
  int line_ = 0;
  absl::flat_hash_set<uint64_t> ids_;
  bool textual_ids_ = false;
  absl::flat_hash_set<std::string> names_;
};

}  // namespace

absl::StatusOr<BufferSet> ParseBufferSetCsv(std::string_view text,
                                            std::string_view source) {
  BufferSet set;
  std::optional<Columns> columns;
  std::optional<RowParser> rows;
  size_t width = 0;
  int line = 0;
  for (absl::string_view raw :
       absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line;
    const absl::string_view row = absl::StripAsciiWhitespace(raw);
    if (row.empty() || row.front() == '#') continue;
    std::vector<absl::string_view> fields = absl::StrSplit(row, ',');
    if (!columns) {
      absl::StatusOr<Columns> header = ParseHeader(fields, source);
      if (!header.ok()) return header.status();
      columns = *header;
      width = fields.size();
      // By the complete pair: a header may also carry a stray `lower`.
      set.convention = columns->first_task != -1 && columns->last_task != -1
                           ? IntervalConvention::kClosed
                           : IntervalConvention::kHalfOpen;
      rows.emplace(*columns, source, set);
      continue;
    }
    if (fields.size() != width) {
      return RowError(source, line,
                      absl::StrFormat("expected %d fields, found %d", width,
                                      fields.size()));
    }
    if (absl::Status parsed = rows->Parse(fields, line); !parsed.ok()) {
      return parsed;
    }
  }
  if (!columns) return RowError(source, line, "no header row (empty file)");
  return set;
}

absl::StatusOr<BufferSet> ReadBufferSetCsv(const std::string& path) {
  std::ifstream file(path);
  if (!file)
    return absl::NotFoundError(absl::StrFormat("%s: cannot open", path));
  std::stringstream contents;
  contents << file.rdbuf();
  return ParseBufferSetCsv(contents.str(), path);
}

std::string FormatBufferSetCsv(const BufferSet& set,
                               const std::vector<ExtraColumn>& extra_columns) {
  const bool closed = set.convention == IntervalConvention::kClosed;
  const bool with_offset =
      std::any_of(set.buffers.begin(), set.buffers.end(),
                  [](const Buffer& b) { return b.offset.has_value(); });
  std::string out =
      closed ? "id,first_task,last_task,size" : "id,lower,upper,size";
  if (with_offset) out += ",offset";
  for (const ExtraColumn& column : extra_columns)
    absl::StrAppend(&out, ",", column.name);
  out += "\n";
  for (size_t i = 0; i < set.buffers.size(); ++i) {
    const Buffer& b = set.buffers[i];
    if (set.names.empty()) {
      absl::StrAppend(&out, b.id);
    } else {
      out += set.names[i];
    }
    absl::StrAppend(&out, ",", b.lower, ",", closed ? b.upper - 1 : b.upper,
                    ",", b.size);
    if (with_offset) {
      if (b.offset) {
        absl::StrAppend(&out, ",", *b.offset);
      } else {
        out += ",";
      }
    }
    for (const ExtraColumn& column : extra_columns)
      absl::StrAppend(&out, ",", column.values[i]);
    out += "\n";
  }
  return out;
}

uint64_t PeakLiveBytes(const BufferSet& set) {
  // Sweep over (time, +size at lower / -size at upper); at equal times frees
  // come first because intervals are half-open. Sums are kept in 128 bits: a
  // few sizes near 2^63 would overflow 64 (the peak saturates at 2^64 - 1).
  std::vector<std::pair<int64_t, __int128>> events;
  events.reserve(set.buffers.size() * 2);
  for (const Buffer& b : set.buffers) {
    events.emplace_back(b.lower, static_cast<__int128>(b.size));
    events.emplace_back(b.upper, -static_cast<__int128>(b.size));
  }
  std::sort(events.begin(), events.end());
  __int128 live = 0;
  __int128 peak = 0;
  for (const auto& [time, delta] : events) {
    live += delta;
    peak = std::max(peak, live);
  }
  return peak > static_cast<__int128>(UINT64_MAX) ? UINT64_MAX
                                                  : static_cast<uint64_t>(peak);
}

}  // namespace tensormem
