#include "trace/trace_line_parser.h"

#include <charconv>
#include <iterator>
#include <limits>
#include <system_error>

#include "absl/strings/str_format.h"
#include "tensormem/core/checked_math.h"

namespace tensormem::trace_internal {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Returns the next whitespace-separated field of `rest` and drops it from
// `rest`; empty when none is left.
std::string_view NextField(std::string_view& rest) {
  size_t begin = 0;
  while (begin < rest.size() && IsBlank(rest[begin])) ++begin;
  size_t end = begin;
  while (end < rest.size() && !IsBlank(rest[end])) ++end;
  std::string_view field = rest.substr(begin, end - begin);
  rest.remove_prefix(end);
  return field;
}

template <typename Integer>
bool ParseInteger(std::string_view text, Integer& value) {
  const char* end = text.data() + text.size();
  auto [ptr, error] = std::from_chars(text.data(), end, value);
  return error == std::errc() && ptr == end && !text.empty();
}

}  // namespace

absl::Status LineParser::Error(std::string_view what) const {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s:%d: %s", source_, line_, what));
}

absl::Status LineParser::Parse(std::string_view line, TraceEvent& event,
                               bool& has_event) {
  ++line_;
  has_event = false;
  std::string_view rest = line;
  const std::string_view op = NextField(rest);
  if (op.empty() || op[0] == '#') return absl::OkStatus();
  if (op.size() != 1 || (op[0] != 'a' && op[0] != 'f')) {
    return Error(absl::StrFormat("unknown op '%s' (expected 'a' or 'f')",
                                 absl::string_view(op.data(), op.size())));
  }
  event = TraceEvent();
  event.op = op[0] == 'a' ? TraceOp::kAlloc : TraceOp::kFree;
  extra_keys_.clear();

  const std::string_view id = NextField(rest);
  if (id.empty()) return Error("missing id");
  if (!ParseInteger(id, event.id)) {
    return Error(absl::StrFormat("bad number '%s' for id",
                                 absl::string_view(id.data(), id.size())));
  }
  if (event.op == TraceOp::kAlloc) {
    const std::string_view bytes = NextField(rest);
    if (bytes.empty()) return Error("missing byte count");
    if (!ParseInteger(bytes, event.bytes)) {
      return Error(
          absl::StrFormat("bad number '%s' for bytes",
                          absl::string_view(bytes.data(), bytes.size())));
    }
  }
  uint32_t keys_seen = 0;
  for (std::string_view key = NextField(rest); !key.empty();
       key = NextField(rest)) {
    if (absl::Status status = ParseKey(key, event, keys_seen); !status.ok())
      return status;
  }

  if (event.op == TraceOp::kAlloc) {
    // A request that failed when recorded never became a live block.
    if (!event.failed) {
      auto [it, inserted] = live_.try_emplace(event.id, line_);
      if (!inserted) {
        return Error(absl::StrFormat(
            "allocation of id %d, which is already live (allocated at line %d)",
            event.id, it->second));
      }
    }
  } else {
    if (event.failed) return Error("'failed' applies to allocations only");
    if (live_.erase(event.id) == 0) {
      return Error(
          absl::StrFormat("free of id %d, which is not live", event.id));
    }
  }
  has_event = true;
  return absl::OkStatus();
}

absl::Status LineParser::ParseKey(std::string_view token, TraceEvent& event,
                                  uint32_t& keys_seen) {
  const size_t equals = token.find('=');
  if (equals == std::string_view::npos || equals == 0) {
    return Error(
        absl::StrFormat("bad field '%s' (expected key=value)",
                        absl::string_view(token.data(), token.size())));
  }
  const std::string_view key = token.substr(0, equals);
  const std::string_view value = token.substr(equals + 1);
  const absl::string_view value_text(value.data(), value.size());
  // A second value for a known key would silently replace the first (and a
  // replaced tag would still be interned).
  constexpr std::string_view kKnownKeys[] = {"t", "stream", "align", "tag",
                                             "failed"};
  for (uint32_t bit = 0; bit < std::size(kKnownKeys); ++bit) {
    if (key != kKnownKeys[bit]) continue;
    if ((keys_seen & (1u << bit)) != 0) {
      return Error(absl::StrFormat("key '%s' given twice",
                                   absl::string_view(key.data(), key.size())));
    }
    keys_seen |= 1u << bit;
  }
  if (key == "t") {
    if (!ParseInteger(value, event.time_ns) || event.time_ns < 0) {
      return Error(absl::StrFormat("bad number '%s' for t (nanoseconds >= 0)",
                                   value_text));
    }
  } else if (key == "stream") {
    if (!ParseInteger(value, event.stream)) {
      return Error(absl::StrFormat("bad number '%s' for stream", value_text));
    }
  } else if (key == "align") {
    uint64_t alignment = 0;
    if (!ParseInteger(value, alignment)) {
      return Error(absl::StrFormat("bad number '%s' for align", value_text));
    }
    if (!IsPowerOfTwo(alignment) ||
        alignment > std::numeric_limits<uint32_t>::max()) {
      return Error(absl::StrFormat(
          "bad alignment %d: not a power of two up to 2^31", alignment));
    }
    event.alignment = static_cast<uint32_t>(alignment);
  } else if (key == "tag") {
    event.tag = value.empty() ? TraceEvent::kNoTag : InternTag(value);
  } else if (key == "failed") {
    if (value != "0" && value != "1") {
      return Error(
          absl::StrFormat("bad value '%s' for failed (0 or 1)", value_text));
    }
    event.failed = value == "1";
  } else {
    if (!extra_keys_.empty()) extra_keys_.push_back(' ');
    extra_keys_.append(token);
  }
  return absl::OkStatus();
}

uint32_t LineParser::InternTag(std::string_view tag) {
  const auto found = tag_index_.find(absl::string_view(tag.data(), tag.size()));
  if (found != tag_index_.end()) return found->second;
  const auto index = static_cast<uint32_t>(tags_.size());
  tags_.emplace_back(tag);
  tag_index_.emplace(tags_.back(), index);
  return index;
}

}  // namespace tensormem::trace_internal
