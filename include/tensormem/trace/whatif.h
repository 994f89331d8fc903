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
#include "tensormem/trace/pytorch_recording.h"
#include "tensormem/trace/replay.h"
#include "tensormem/trace/snapshot_replay.h"

namespace tensormem {

struct WhatIfCandidate {
  std::string
      label;  // as written, e.g. "pytorch config=expandable_segments:True"
  AllocatorSpec spec;
};

// One candidate: "POLICY [key=value ...]". Errors name the candidate and key.
absl::StatusOr<WhatIfCandidate> ParseWhatIfCandidate(std::string_view text);
// Candidates separated by ';' (empty ones are skipped); "all": every
// registered policy, and pytorch with expandable segments. The older list
// spelling "tf,pytorch[expandable_segments:True]" (no ';' or '=') is read as
// "tf; pytorch config=expandable_segments:True".
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
  // A PyTorch snapshot's recording (segment events): adds the recorded row,
  // a `pytorch` candidate with the recording's settings when none has them,
  // and the check of that candidate replayed as the GPU ran it.
  const PytorchRecording* recording = nullptr;
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
  AllocatorSpec spec;
  std::string allocator;  // DescribeAllocator
  // The candidate with a recording's settings, replayed as the GPU ran it
  // (its starting state, the recorded addresses); others start cold.
  bool replayed_as_run = false;
  ReplayMetrics metrics;  // without a device memory limit
  // (reserved - live) / reserved when reserved bytes first peak.
  double fragmentation_at_peak = 0;
  std::optional<MinimumLimit> min_limit;
  std::string min_limit_error;  // when the search failed
  bool device_memory_checked = false;
  std::optional<WhatIfOutOfMemory> out_of_memory;  // unset: it fits
  std::vector<uint64_t> reserved_timeline;  // one per WhatIfResult::events
};

// What PyTorch's caching allocator reserved on the GPU, from a snapshot's
// segment events, and whether the `pytorch` policy reproduces it.
struct WhatIfRecorded {
  std::string config;  // the recording's settings ("": PyTorch's defaults)
  uint64_t peak_reserved_bytes = 0;
  int64_t segments = 0;
  int64_t alloc_retries = 0;
  // Reserved bytes when recording began (> 0: a warm start; the candidate
  // rows all start cold, so only `as_run` continues from there).
  uint64_t reserved_at_start_bytes = 0;
  size_t row = 0;  // the candidate with the recording's settings
  // That candidate replayed as the GPU ran it: from the recording's starting
  // state, at the recorded addresses, every event compared.
  uint64_t as_run_peak_reserved_bytes = 0;
  SnapshotComparison as_run;
  std::string as_run_error;  // why it could not be replayed so (then unset)
  // Peak reserved, segments and retries equal, and no event diverged.
  bool matches = false;
};

// A setting's peak reserved bytes against the baseline's.
struct WhatIfSaving {
  size_t row = 0;
  int64_t saving_bytes = 0;  // baseline minus this row (< 0: it reserves more)
  double saving_percent = 0;
};

// What to do: the PyTorch setting that reserves least, and tensormem's
// `tight` through the CUDA plug-in, each against the baseline (the `pytorch`
// candidate with the recording's settings, or PyTorch's defaults). Rows that
// run out of the device memory given are passed over.
struct WhatIfRecommendation {
  size_t baseline_row = 0;
  std::optional<WhatIfSaving> best_pytorch;  // unset: baseline is the least
  std::optional<WhatIfSaving> tight;         // unset: no tight candidate
  std::vector<std::string> lines;            // the advice, in words
};

struct WhatIfResult {
  uint64_t peak_live_bytes = 0;
  std::optional<uint64_t> device_memory;
  std::vector<int64_t> timeline_events;  // x of the reserved timelines
  std::vector<WhatIfRow> rows;
  std::optional<WhatIfRecorded> recorded;  // a snapshot with segment events
  // Unset when no candidate is the baseline (no `pytorch` candidate).
  std::optional<WhatIfRecommendation> recommendation;
};

// Replays `trace` once per candidate with its specification as given, then
// (options) searches its smallest serving memory limit (FindMinimumLimit,
// same growth and configuration, only the limit varies) and replays it
// limited to `device_memory`. With `options.recording`, the candidate with
// the recording's settings is also replayed as the GPU ran it
// (ReplaySnapshot, verified). Errors: an allocator that cannot be built, or
// a trace the allocator rejects.
absl::StatusOr<WhatIfResult> RunWhatIf(const PreparedTrace& trace,
                                       std::vector<WhatIfCandidate> candidates,
                                       const WhatIfOptions& options);

// The recorded peak of reserved bytes over the peak of live bytes; unset
// without a recorded row or with nothing live.
std::optional<double> RecordedOverLive(const WhatIfResult& result);

nlohmann::json WhatIfToJson(const WhatIfResult& result);

}  // namespace tensormem

#endif  // TENSORMEM_TRACE_WHATIF_H_
