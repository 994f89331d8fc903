// The what-if's recorded row and its recommendation.
#include "whatif_recorded.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "snapshot_limit.h"
#include "tensormem/core/units.h"
#include "tensormem/trace/snapshot_replay.h"

namespace tensormem::trace_internal {
namespace {

constexpr std::string_view kPytorch = "pytorch";
constexpr std::string_view kTight = "tight";

// Settings compare without blanks ("a:1, b:2" is "a:1,b:2").
std::string SettingsKey(std::string_view config) {
  return absl::StrReplaceAll(absl::StripAsciiWhitespace(absl::string_view(
                                 config.data(), config.size())),
                             {{" ", ""}, {"\t", ""}});
}

bool HasSettings(const AllocatorSpec& spec, std::string_view config) {
  return spec.policy == kPytorch &&
         SettingsKey(spec.config) == SettingsKey(config);
}

std::string Setting(std::string_view config) {
  if (SettingsKey(config).empty()) return "PyTorch's defaults";
  return absl::StrCat("PYTORCH_CUDA_ALLOC_CONF=", SettingsKey(config));
}

// Served every request the recording served, within any limit given.
bool Fits(const WhatIfRow& row) {
  return !row.out_of_memory &&
         row.metrics.failed_allocs <= row.metrics.recorded_failures;
}

WhatIfSaving SavingOf(const WhatIfResult& result, size_t baseline, size_t row) {
  const uint64_t base = result.rows[baseline].metrics.peak_pool_bytes;
  const uint64_t peak = result.rows[row].metrics.peak_pool_bytes;
  const int64_t saving =
      static_cast<int64_t>(base) - static_cast<int64_t>(peak);
  return {.row = row,
          .saving_bytes = saving,
          .saving_percent = base == 0 ? 0 : 100.0 * saving / base};
}

std::optional<size_t> Baseline(const WhatIfResult& result) {
  if (result.recorded) return result.recorded->row;
  std::optional<size_t> first_pytorch;
  for (size_t i = 0; i < result.rows.size(); ++i) {
    if (HasSettings(result.rows[i].spec, "")) return i;
    if (!first_pytorch && result.rows[i].spec.policy == kPytorch)
      first_pytorch = i;
  }
  return first_pytorch;
}

// The row of `policy` that reserves least among those that fit.
std::optional<size_t> LeastOf(const WhatIfResult& result,
                              std::string_view policy) {
  std::optional<size_t> best;
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const WhatIfRow& row = result.rows[i];
    if (row.spec.policy != policy || !Fits(row)) continue;
    if (!best || row.metrics.peak_pool_bytes <
                     result.rows[*best].metrics.peak_pool_bytes)
      best = i;
  }
  return best;
}

std::string SavingWords(const WhatIfResult& result, const WhatIfSaving& saving,
                        std::string_view baseline) {
  const std::string peak =
      HumanBytes(result.rows[saving.row].metrics.peak_pool_bytes);
  if (saving.saving_bytes < 0) {
    return absl::StrFormat(
        "%s, %s more than %s", peak,
        HumanBytes(static_cast<uint64_t>(-saving.saving_bytes)), baseline);
  }
  return absl::StrFormat("%s, saving %s (%.1f%%) over %s", peak,
                         HumanBytes(saving.saving_bytes), saving.saving_percent,
                         baseline);
}

std::vector<std::string> AdviceLines(const WhatIfResult& result,
                                     const WhatIfRecommendation& advice) {
  const WhatIfRow& base = result.rows[advice.baseline_row];
  const std::string baseline = absl::StrCat(
      result.recorded ? "the recorded settings (" : "the baseline (",
      Setting(base.spec.config), ", ", HumanBytes(base.metrics.peak_pool_bytes),
      ")");
  std::vector<std::string> lines;
  if (!Fits(base)) {
    lines.push_back(absl::StrCat("Under the device memory given, ", baseline,
                                 " runs out of memory."));
  }
  if (advice.best_pytorch) {
    lines.push_back(absl::StrCat(
        "Least reserved of the PyTorch settings tried: ",
        Setting(result.rows[advice.best_pytorch->row].spec.config), ": ",
        SavingWords(result, *advice.best_pytorch, baseline), "."));
  } else if (Fits(base)) {
    lines.push_back(absl::StrCat("No PyTorch setting tried reserves less than ",
                                 baseline, "."));
  } else {
    lines.push_back("No PyTorch setting tried fits the device memory given.");
  }
  if (advice.tight) {
    lines.push_back(
        absl::StrCat("tensormem's tight through the CUDA plug-in, holes given "
                     "back as it grows (tensormem_torch.enable_cuda(config="
                     "\"decommit:hold_peak\"), docs/cuda.md): ",
                     SavingWords(result, *advice.tight, baseline), "."));
  } else if (std::any_of(result.rows.begin(), result.rows.end(),
                         [](const WhatIfRow& row) {
                           return row.spec.policy == kTight;
                         })) {
    lines.push_back(
        "tensormem's tight runs out of the device memory given here.");
  }
  return lines;
}

size_t EnsureRecordedCandidate(const PytorchRecording& recording,
                               std::vector<WhatIfCandidate>& candidates) {
  const std::string config = recording.config.value_or("");
  auto first_pytorch = candidates.end();
  for (auto it = candidates.begin(); it != candidates.end(); ++it) {
    if (HasSettings(it->spec, config))
      return static_cast<size_t>(it - candidates.begin());
    if (first_pytorch == candidates.end() && it->spec.policy == kPytorch)
      first_pytorch = it;
  }
  WhatIfCandidate recorded;
  recorded.label = SettingsKey(config).empty()
                       ? "pytorch"
                       : absl::StrCat("pytorch config=", SettingsKey(config));
  recorded.spec.policy = std::string(kPytorch);
  recorded.spec.config = config;
  const auto at =
      first_pytorch == candidates.end() ? candidates.begin() : first_pytorch;
  const size_t index = static_cast<size_t>(at - candidates.begin());
  candidates.insert(at, std::move(recorded));
  return index;
}

RecordedComparison MeasureRecorded(const PreparedTrace& trace,
                                   const PytorchRecording& recording,
                                   const WhatIfCandidate& candidate,
                                   size_t row) {
  RecordedComparison out;
  WhatIfRecorded& recorded = out.recorded;
  recorded.config = SettingsKey(recording.config.value_or(""));
  recorded.peak_reserved_bytes = recording.peak_reserved_bytes;
  recorded.segments = recording.segments_added;
  recorded.reserved_at_start_bytes = recording.reserved_at_start_bytes;
  recorded.alloc_retries = RecordedRetries(trace, recording);
  recorded.row = row;
  const ReplayOptions options{
      .max_timeline_samples = std::max<size_t>(1, trace.steps().size()),
      .max_failure_reports = 0};
  absl::StatusOr<SnapshotReplayResult> as_run = ReplaySnapshot(
      trace, recording, candidate.spec, options, /*verify=*/true);
  if (!as_run.ok()) {
    // The candidates still compare; only the check is lost.
    recorded.as_run_error = std::string(as_run.status().message());
    return out;
  }
  recorded.as_run = std::move(as_run->comparison);
  recorded.as_run_peak_reserved_bytes = as_run->replay.metrics.peak_pool_bytes;
  const SnapshotComparison& check = recorded.as_run;
  recorded.matches =
      recorded.as_run_peak_reserved_bytes == recorded.peak_reserved_bytes &&
      check.replayed_segments == check.recorded_segments &&
      check.replayed_alloc_retries == check.recorded_alloc_retries &&
      check.divergences == 0;
  out.as_run = std::move(as_run->replay);
  return out;
}

}  // namespace

RecordedComparison CompareWithRecording(
    const PreparedTrace& trace, const PytorchRecording& recording,
    std::vector<WhatIfCandidate>& candidates) {
  const size_t row = EnsureRecordedCandidate(recording, candidates);
  RecordedComparison compared =
      MeasureRecorded(trace, recording, candidates[row], row);
  if (const auto capacity = compared.recorded.as_run.memory_limit_inferred) {
    for (WhatIfCandidate& candidate : candidates) {
      if (!candidate.spec.memory_limit) candidate.spec.memory_limit = capacity;
    }
  }
  return compared;
}

std::optional<WhatIfRecommendation> Recommend(const WhatIfResult& result) {
  const std::optional<size_t> baseline = Baseline(result);
  if (!baseline) return std::nullopt;
  WhatIfRecommendation advice;
  advice.baseline_row = *baseline;
  if (const std::optional<size_t> best = LeastOf(result, kPytorch)) {
    const WhatIfSaving saving = SavingOf(result, *baseline, *best);
    const bool baseline_fits = Fits(result.rows[*baseline]);
    if (saving.saving_bytes > 0 || (!baseline_fits && *best != *baseline))
      advice.best_pytorch = saving;
  }
  if (const std::optional<size_t> tight = LeastOf(result, kTight))
    advice.tight = SavingOf(result, *baseline, *tight);
  advice.lines = AdviceLines(result, advice);
  return advice;
}

}  // namespace tensormem::trace_internal
