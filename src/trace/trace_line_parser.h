// The line-level scanner shared by ParseTrace and TraceReader.
//
// Hand-written on purpose: traces reach 10^7 lines and are parsed at >= 100
// MB/s, so fields are split by hand and numbers read with std::from_chars.
// The parser also keeps the set of live ids, to reject a free of a dead id or
// a second allocation of a live one where it happens.
#ifndef TENSORMEM_SRC_TRACE_TRACE_LINE_PARSER_H_
#define TENSORMEM_SRC_TRACE_TRACE_LINE_PARSER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "tensormem/trace/trace.h"

namespace tensormem::trace_internal {

class LineParser {
 public:
  explicit LineParser(std::string source) : source_(std::move(source)) {}

  // Parses the next line (without its '\n'). Sets `has_event` when the line
  // holds an event (false for blank and comment lines).
  absl::Status Parse(std::string_view line, TraceEvent& event, bool& has_event);

  const std::vector<std::string>& tags() const { return tags_; }
  std::vector<std::string> TakeTags() { return std::move(tags_); }
  // Unknown keys of the last event, as written.
  std::string_view extra_keys() const { return extra_keys_; }
  int64_t line() const { return line_; }

 private:
  absl::Status Error(std::string_view what) const;
  // `keys_seen`: the known keys met so far on the line (a bit each).
  absl::Status ParseKey(std::string_view token, TraceEvent& event,
                        uint32_t& keys_seen);
  uint32_t InternTag(std::string_view tag);

  std::string source_;
  int64_t line_ = 0;
  std::vector<std::string> tags_ = {""};
  absl::flat_hash_map<std::string, uint32_t> tag_index_;
  std::string extra_keys_;
  absl::flat_hash_map<uint64_t, int64_t> live_;  // id -> line of its allocation
};

}  // namespace tensormem::trace_internal

#endif  // TENSORMEM_SRC_TRACE_TRACE_LINE_PARSER_H_
