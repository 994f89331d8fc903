// RunWhatIf: one prepared trace, several allocator specifications.
#include "tensormem/trace/whatif.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/trace/replay_allocator.h"
#include "whatif_recorded.h"

namespace tensormem {
namespace {

// Timing passes per candidate: fewer than `replay`'s, as every candidate
// is timed.
constexpr int kTimingRuns = 5;

// The first failure the allocator itself produced under `limit`.
absl::StatusOr<std::optional<WhatIfOutOfMemory>> FirstOutOfMemory(
    const PreparedTrace& trace, AllocatorSpec spec, uint64_t limit) {
  spec.memory_limit = limit;
  absl::StatusOr<ReplayTarget> target = CreateReplayTarget(spec);
  if (!target.ok()) return target.status();
  absl::StatusOr<ReplayResult> result =
      Replay(trace, *target, {.max_failure_reports = 1});
  if (!result.ok()) return result.status();
  const ReplayMetrics& metrics = result->metrics;
  if (result->failures.empty()) return std::nullopt;
  const FailedAllocation& first = result->failures.front();
  return WhatIfOutOfMemory{
      .event = first.event,
      .bytes = first.bytes,
      .live_bytes = first.live_bytes,
      .reserved_bytes = first.pool_bytes,
      .failed_allocs = metrics.failed_allocs - metrics.recorded_failures,
      .explanation = first.explanation};
}

// Per-event timeline, then fragmentation where reserved first peaks, and the
// reserved series decimated to the result's sample events.
void UseTimeline(const std::vector<TimelineSample>& timeline,
                 const std::vector<int64_t>& sample_events, WhatIfRow& row) {
  const uint64_t peak = row.metrics.peak_pool_bytes;
  for (const TimelineSample& sample : timeline) {
    if (sample.pool_bytes != peak || peak == 0) continue;
    row.fragmentation_at_peak =
        static_cast<double>(peak - std::min(peak, sample.live_bytes)) / peak;
    break;
  }
  size_t next = 0;
  uint64_t stretch_max = 0;
  for (const TimelineSample& sample : timeline) {
    stretch_max = std::max(stretch_max, sample.pool_bytes);
    if (next < sample_events.size() && sample.event == sample_events[next]) {
      row.reserved_timeline.push_back(stretch_max);
      stretch_max = 0;
      ++next;
    }
  }
}

// Sample events: the ends of equal stretches, at most `samples` of them.
std::vector<int64_t> SampleEvents(size_t events, size_t samples) {
  std::vector<int64_t> ends;
  if (samples == 0 || events == 0) return ends;
  const size_t stride = std::max<size_t>(1, (events + samples - 1) / samples);
  for (size_t end = stride; end < events; end += stride)
    ends.push_back(static_cast<int64_t>(end - 1));
  ends.push_back(static_cast<int64_t>(events - 1));
  return ends;
}

// `replayed`: the candidate's replay when already made (as the GPU ran it).
absl::StatusOr<WhatIfRow> RunCandidate(const PreparedTrace& trace,
                                       const WhatIfCandidate& candidate,
                                       const WhatIfOptions& options,
                                       const std::vector<int64_t>& samples,
                                       const ReplayResult* replayed) {
  WhatIfRow row;
  row.label = candidate.label;
  row.spec = candidate.spec;
  row.allocator = DescribeAllocator(candidate.spec);
  if (replayed) {
    row.replayed_as_run = true;
    row.metrics = replayed->metrics;
    UseTimeline(replayed->timeline, samples, row);
  } else {
    absl::StatusOr<ReplayTarget> target = CreateReplayTarget(candidate.spec);
    if (!target.ok()) return target.status();
    absl::StatusOr<ReplayResult> result = Replay(
        trace, *target,
        {.max_timeline_samples = std::max<size_t>(1, trace.steps().size()),
         .max_failure_reports = 0});
    if (!result.ok()) return result.status();
    row.metrics = result->metrics;
    UseTimeline(result->timeline, samples, row);
  }
  if (options.measure_speed) {
    absl::StatusOr<ReplayMetrics> timed =
        FastestTimedReplay(trace, candidate.spec, kTimingRuns);
    if (!timed.ok()) return timed.status();
    row.metrics.seconds = timed->seconds;
    row.metrics.ns_per_op = timed->ns_per_op;
  }
  if (options.min_limit) {
    AllocatorSpec trial = candidate.spec;
    absl::StatusOr<MinimumLimit> found = FindMinimumLimit(
        trace,
        [&trial](uint64_t limit) {
          trial.memory_limit = limit;
          return CreateReplayTarget(trial);
        },
        candidate.spec.capacity);
    if (found.ok()) {
      row.min_limit = *found;
    } else {
      row.min_limit_error = std::string(found.status().message());
    }
  }
  if (options.device_memory) {
    absl::StatusOr<std::optional<WhatIfOutOfMemory>> oom =
        FirstOutOfMemory(trace, candidate.spec, *options.device_memory);
    if (!oom.ok()) return oom.status();
    row.device_memory_checked = true;
    row.out_of_memory = *std::move(oom);
  }
  return row;
}

nlohmann::json RecordedToJson(const WhatIfResult& result) {
  const WhatIfRecorded& recorded = *result.recorded;
  nlohmann::json as_run;
  if (recorded.as_run_error.empty()) {
    as_run = SnapshotComparisonToJson(recorded.as_run);
    as_run["peak_reserved_bytes"] = recorded.as_run_peak_reserved_bytes;
  } else {
    as_run = {{"error", recorded.as_run_error}};
  }
  return {{"config", recorded.config},
          {"peak_reserved_bytes", recorded.peak_reserved_bytes},
          {"peak_reserved_over_live", RecordedOverLive(result).value_or(0.0)},
          {"segments", recorded.segments},
          {"alloc_retries", recorded.alloc_retries},
          {"reserved_at_start_bytes", recorded.reserved_at_start_bytes},
          {"candidate", result.rows[recorded.row].label},
          {"as_run", std::move(as_run)},
          {"matches", recorded.matches}};
}

nlohmann::json SavingToJson(const WhatIfResult& result,
                            const WhatIfSaving& saving) {
  const WhatIfRow& row = result.rows[saving.row];
  return {{"candidate", row.label},
          {"config", row.spec.config},
          {"peak_reserved_bytes", row.metrics.peak_pool_bytes},
          {"saving_bytes", saving.saving_bytes},
          {"saving_percent", saving.saving_percent}};
}

nlohmann::json RecommendationToJson(const WhatIfResult& result) {
  const WhatIfRecommendation& advice = *result.recommendation;
  const WhatIfRow& baseline = result.rows[advice.baseline_row];
  nlohmann::json json = {
      {"baseline",
       {{"candidate", baseline.label},
        {"config", baseline.spec.config},
        {"peak_reserved_bytes", baseline.metrics.peak_pool_bytes}}},
      {"best_pytorch", nullptr},
      {"tight", nullptr},
      {"text", advice.lines}};
  if (advice.best_pytorch)
    json["best_pytorch"] = SavingToJson(result, *advice.best_pytorch);
  if (advice.tight) json["tight"] = SavingToJson(result, *advice.tight);
  return json;
}

// "all": every registered policy, and pytorch with expandable segments.
std::vector<std::string> AllCandidates() {
  std::vector<std::string> items;
  for (const PolicyInfo& policy : Policies()) items.emplace_back(policy.name);
  items.emplace_back("pytorch config=expandable_segments:True");
  return items;
}

// The older list spelling, "tf,pytorch[expandable_segments:True]": commas
// outside brackets, a configuration in brackets.
absl::StatusOr<std::vector<std::string>> BracketItems(std::string_view text) {
  TM_ASSIGN_OR_RETURN(std::vector<std::string> pieces,
                      SplitOutsideBrackets(text));
  for (std::string& piece : pieces) {
    const size_t open = piece.find('[');
    if (open == std::string::npos) continue;
    if (piece.back() != ']') {
      return absl::InvalidArgumentError(
          absl::StrCat("'", piece, "' lacks its closing ']'"));
    }
    piece = absl::StrCat(piece.substr(0, open), " config=",
                         piece.substr(open + 1, piece.size() - open - 2));
  }
  return pieces;
}

// The candidates' texts: "all", items separated by ';', or the older
// bracket spelling (no ';' and no '=').
absl::StatusOr<std::vector<std::string>> CandidateItems(std::string_view text) {
  const absl::string_view view(text.data(), text.size());
  if (absl::StripAsciiWhitespace(view) == "all") return AllCandidates();
  if (!absl::StrContains(view, ';') && !absl::StrContains(view, '=') &&
      (absl::StrContains(view, ',') || absl::StrContains(view, '['))) {
    return BracketItems(text);
  }
  std::vector<std::string> items;
  for (absl::string_view part : absl::StrSplit(view, ';')) {
    if (!absl::StripAsciiWhitespace(part).empty())
      items.emplace_back(part.data(), part.size());
  }
  return items;
}

}  // namespace

absl::StatusOr<WhatIfCandidate> ParseWhatIfCandidate(std::string_view text) {
  WhatIfCandidate candidate;
  candidate.label = std::string(
      absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size())));
  std::vector<std::string> words =
      absl::StrSplit(candidate.label, ' ', absl::SkipEmpty());
  if (words.empty()) return absl::InvalidArgumentError("empty candidate");
  const auto fail = [&](const absl::Status& status) {
    return absl::InvalidArgumentError(
        absl::StrCat("candidate '", candidate.label, "': ", status.message()));
  };
  if (absl::Status set = SetAllocatorOption(candidate.spec, "policy", words[0]);
      !set.ok())
    return fail(set);
  for (size_t i = 1; i < words.size(); ++i) {
    const size_t equals = words[i].find('=');
    if (equals == std::string::npos) {
      return fail(absl::InvalidArgumentError(absl::StrCat(
          "'", words[i],
          "' is not key=value (e.g. config=expandable_segments:True)")));
    }
    if (absl::Status set =
            SetAllocatorOption(candidate.spec, words[i].substr(0, equals),
                               words[i].substr(equals + 1));
        !set.ok())
      return fail(set);
  }
  // Building one catches unknown policies and bad configurations now.
  if (absl::StatusOr<ReplayTarget> probe = CreateReplayTarget(candidate.spec);
      !probe.ok())
    return fail(probe.status());
  return candidate;
}

absl::StatusOr<std::vector<WhatIfCandidate>> ParseWhatIfCandidates(
    std::string_view text) {
  TM_ASSIGN_OR_RETURN(std::vector<std::string> items, CandidateItems(text));
  std::vector<WhatIfCandidate> candidates;
  for (const std::string& item : items) {
    absl::StatusOr<WhatIfCandidate> candidate = ParseWhatIfCandidate(item);
    if (!candidate.ok()) return candidate.status();
    candidates.push_back(*std::move(candidate));
  }
  if (candidates.empty()) return absl::InvalidArgumentError("no candidates");
  return candidates;
}

std::vector<WhatIfCandidate> DefaultWhatIfCandidates() {
  return *ParseWhatIfCandidates(kDefaultWhatIfCandidates);
}

absl::StatusOr<WhatIfResult> RunWhatIf(const PreparedTrace& trace,
                                       std::vector<WhatIfCandidate> candidates,
                                       const WhatIfOptions& options) {
  const PytorchRecording* recording =
      options.recording && options.recording->has_segment_events()
          ? options.recording
          : nullptr;
  WhatIfResult result;
  std::optional<trace_internal::RecordedComparison> compared;
  if (recording) {
    compared =
        trace_internal::CompareWithRecording(trace, *recording, candidates);
    result.recorded = compared->recorded;
  }
  result.peak_live_bytes = trace.peak_live_bytes();
  result.device_memory = options.device_memory;
  result.timeline_events =
      SampleEvents(trace.steps().size(), options.timeline_samples);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const WhatIfCandidate& candidate = candidates[i];
    const bool as_run =
        compared && compared->as_run && compared->recorded.row == i;
    absl::StatusOr<WhatIfRow> row =
        RunCandidate(trace, candidate, options, result.timeline_events,
                     as_run ? &*compared->as_run : nullptr);
    if (!row.ok()) {
      return absl::Status(
          row.status().code(),
          absl::StrCat(candidate.label, ": ", row.status().message()));
    }
    result.rows.push_back(*std::move(row));
  }
  result.recommendation = trace_internal::Recommend(result);
  return result;
}

std::optional<double> RecordedOverLive(const WhatIfResult& result) {
  if (!result.recorded || result.peak_live_bytes == 0) return std::nullopt;
  return static_cast<double>(result.recorded->peak_reserved_bytes) /
         result.peak_live_bytes;
}

nlohmann::json WhatIfToJson(const WhatIfResult& result) {
  nlohmann::json rows = nlohmann::json::array();
  for (const WhatIfRow& row : result.rows) {
    nlohmann::json json = {
        {"candidate", row.label},
        {"allocator_config", row.allocator},
        {"replayed_as_run", row.replayed_as_run},
        {"peak_reserved_bytes", row.metrics.peak_pool_bytes},
        {"peak_reserved_over_live", row.metrics.fragmentation},
        {"fragmentation_at_peak", row.fragmentation_at_peak},
        {"failed_allocs", row.metrics.failed_allocs},
        {"ns_per_op", row.metrics.ns_per_op},
        {"metrics", ReplayMetricsToJson(row.metrics)}};
    if (row.min_limit) json.update(MinimumLimitToJson(*row.min_limit));
    if (!row.min_limit_error.empty())
      json["min_limit_error"] = row.min_limit_error;
    if (row.device_memory_checked) {
      json["fits_device_memory"] = !row.out_of_memory.has_value();
      if (const auto& oom = row.out_of_memory) {
        json["out_of_memory"] = {{"event", oom->event},
                                 {"bytes", oom->bytes},
                                 {"live_bytes", oom->live_bytes},
                                 {"reserved_bytes", oom->reserved_bytes},
                                 {"failed_allocs", oom->failed_allocs},
                                 {"explanation", oom->explanation}};
      }
    }
    if (!row.reserved_timeline.empty())
      json["reserved_timeline"] = row.reserved_timeline;
    rows.push_back(std::move(json));
  }
  nlohmann::json json = {{"peak_live_bytes", result.peak_live_bytes},
                         {"candidates", std::move(rows)}};
  if (result.recorded) json["recorded"] = RecordedToJson(result);
  if (result.recommendation)
    json["recommendation"] = RecommendationToJson(result);
  if (result.device_memory) json["device_memory_bytes"] = *result.device_memory;
  if (!result.timeline_events.empty())
    json["timeline_events"] = result.timeline_events;
  return json;
}

}  // namespace tensormem
