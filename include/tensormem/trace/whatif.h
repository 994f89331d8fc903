// What-if: one workload replayed through several allocator policies and
// configurations, compared side by side (docs/replay.md, "What-if").
//
// A candidate is written as a policy name followed by allocator options
// (allocator_spec.h keys) as key=value, e.g.
//   "pytorch config=expandable_segments:True"
//   "pytorch config=max_split_size_mb:512,roundup_power2_divisions:4"
//   "tf growth=false"
//
//   TM_ASSIGN_OR_RETURN(std::vector<WhatIfCandidate> candidates,
//                       ParseWhatIfCandidates("tf; pytorch"));
//   WhatIfOptions options;
//   options.device_memory = 80 * kGiB;
//   TM_ASSIGN_OR_RETURN(WhatIfResult result,
//                       RunWhatIf(prepared, candidates, options));
//   std::cout << WhatIfToJson(result).dump(2);
#ifndef TENSORMEM_TRACE_WHATIF_H_
#define TENSORMEM_TRACE_WHATIF_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/trace/replay.h"

namespace tensormem {

struct WhatIfCandidate {
  std::string
      label;  // as written, e.g. "pytorch config=expandable_segments:True"
  AllocatorSpec spec;
};

// One candidate: "POLICY [key=value ...]". Errors name the candidate and key.
absl::StatusOr<WhatIfCandidate> ParseWhatIfCandidate(std::string_view text);
// Candidates separated by ';' (empty ones are skipped).
absl::StatusOr<std::vector<WhatIfCandidate>> ParseWhatIfCandidates(
    std::string_view text);
// The candidates compared when none are given, in ParseWhatIfCandidates'
// syntax.
inline constexpr std::string_view kDefaultWhatIfCandidates =
    "tf; pytorch; pytorch config=expandable_segments:True; "
    "pytorch config=max_split_size_mb:512; tight";
// kDefaultWhatIfCandidates, parsed.
std::vector<WhatIfCandidate> DefaultWhatIfCandidates();

struct WhatIfOptions {
  // Replay again with this memory limit and report the first failure.
  std::optional<uint64_t> device_memory;
  bool min_limit = true;        // search the smallest serving limit
  bool measure_speed = true;    // time the allocator calls alone
  size_t timeline_samples = 0;  // reserved bytes over time; 0: none
};

// Where a candidate ran out of memory under `device_memory`.
struct WhatIfOutOfMemory {
  int64_t event = 0;   // index in the trace
  uint64_t bytes = 0;  // the request
  uint64_t live_bytes = 0;
  uint64_t reserved_bytes = 0;
  int64_t failed_allocs =
      0;                    // in all, not counting failures the trace recorded
  std::string explanation;  // the allocator's own
};

struct WhatIfRow {
  std::string label;
  std::string allocator;  // DescribeAllocator
  ReplayMetrics metrics;  // without a device memory limit
  // (reserved - live) / reserved when reserved bytes first peak.
  double fragmentation_at_peak = 0;
  std::optional<MinimumLimit> min_limit;
  std::string min_limit_error;  // when the search failed
  bool device_memory_checked = false;
  std::optional<WhatIfOutOfMemory> out_of_memory;  // unset: it fits
  std::vector<uint64_t> reserved_timeline;  // one per WhatIfResult::events
};

struct WhatIfResult {
  uint64_t peak_live_bytes = 0;
  std::optional<uint64_t> device_memory;
  std::vector<int64_t> timeline_events;  // x of the reserved timelines
  std::vector<WhatIfRow> rows;
};

// Replays `trace` once per candidate with its specification as given, then
// (options) searches its smallest serving memory limit (FindMinimumLimit,
// same growth and configuration, only the limit varies) and replays it
// limited to `device_memory`. Errors: an allocator that cannot be built, or
// a trace the allocator rejects.
absl::StatusOr<WhatIfResult> RunWhatIf(
    const PreparedTrace& trace, const std::vector<WhatIfCandidate>& candidates,
    const WhatIfOptions& options);

nlohmann::json WhatIfToJson(const WhatIfResult& result);

}  // namespace tensormem

#endif  // TENSORMEM_TRACE_WHATIF_H_
