#include "tensormem/report/whatif_text.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tensormem/core/units.h"
#include "tensormem/report/text_table.h"

namespace tensormem {
namespace {

std::string MinLimitCell(const WhatIfRow& row) {
  if (!row.min_limit) return row.min_limit_error.empty() ? "-" : "none";
  return absl::StrFormat("%s%s", HumanBytes(row.min_limit->limit_bytes),
                         row.min_limit->method == MinLimitMethod::kBisection
                             ? " (bisection)"
                             : "");
}

std::string OutOfMemoryCell(const WhatIfRow& row) {
  if (!row.device_memory_checked) return "-";
  if (!row.out_of_memory) return "fits";
  return absl::StrFormat("OOM at event %d (%s)", row.out_of_memory->event,
                         HumanBytes(row.out_of_memory->bytes));
}

// Allocators that learn loops (planned): reserved from the iteration their
// plan began to serve, and over live bytes then; or why no plan serves.
std::string SteadyCell(const WhatIfRow& row) {
  if (const std::optional<double> ratio = row.metrics.steady_ratio()) {
    return absl::StrFormat("%s (%.4f)",
                           HumanBytes(*row.metrics.steady_pool_bytes), *ratio);
  }
  const std::string why = row.metrics.NoSteadyStateReason();
  return why.empty() ? "-" : why;
}

std::vector<std::string> RecordedRow(const WhatIfResult& result) {
  const WhatIfRecorded& recorded = *result.recorded;
  std::vector<std::string> cells(WhatIfTableHeader().size(), "-");
  cells[0] = "recorded (PyTorch on the GPU)";
  cells[1] = HumanBytes(recorded.peak_reserved_bytes);
  if (const std::optional<double> ratio = RecordedOverLive(result))
    cells[2] = absl::StrFormat("%.4f", *ratio);
  return cells;
}

void AppendRowNotes(const WhatIfResult& result, std::string& text) {
  for (const WhatIfRow& row : result.rows) {
    if (row.min_limit && row.min_limit->method == MinLimitMethod::kBisection) {
      absl::StrAppend(&text, "\n", row.label,
                      ": min limit by bisection only (assumes monotone; the "
                      "exact scan was too costly)\n");
    }
    const int64_t failed =
        row.metrics.failed_allocs - row.metrics.recorded_failures;
    if (failed > 0) {
      absl::StrAppendFormat(&text,
                            "\n%s: %d allocations failed under its memory "
                            "limit (%s)\n",
                            row.label, failed, row.allocator);
    }
    if (!row.out_of_memory) continue;
    const WhatIfOutOfMemory& oom = *row.out_of_memory;
    absl::StrAppendFormat(
        &text,
        "\n%s: out of memory at event %d, a request of %s with %s live and "
        "%s reserved (%d failed allocations in all)\n%s\n",
        row.label, oom.event, HumanBytes(oom.bytes), HumanBytes(oom.live_bytes),
        HumanBytes(oom.reserved_bytes), oom.failed_allocs, oom.explanation);
  }
}

}  // namespace

std::vector<std::string> WhatIfTableHeader() {
  return {"candidate",     "peak reserved", "reserved/live",
          "frag. at peak", "min limit",     "min limit/live",
          "ns/op",         "device memory", "steady reserved"};
}

std::vector<std::vector<std::string>> WhatIfTableRows(
    const WhatIfResult& result) {
  std::vector<std::vector<std::string>> rows;
  if (result.recorded) rows.push_back(RecordedRow(result));
  for (const WhatIfRow& row : result.rows) {
    rows.push_back(
        {row.replayed_as_run ? absl::StrCat(row.label, " (as run)") : row.label,
         HumanBytes(row.metrics.peak_pool_bytes),
         absl::StrFormat("%.4f", row.metrics.fragmentation),
         absl::StrFormat("%.1f%%", 100 * row.fragmentation_at_peak),
         MinLimitCell(row),
         row.min_limit ? absl::StrFormat("%.4f", row.min_limit->ratio) : "-",
         row.metrics.ns_per_op > 0
             ? absl::StrFormat("%.1f", row.metrics.ns_per_op)
             : "-",
         OutOfMemoryCell(row), SteadyCell(row)});
  }
  return rows;
}

std::vector<std::string> WhatIfRecordedLines(const WhatIfResult& result) {
  if (!result.recorded) return {};
  const WhatIfRecorded& recorded = *result.recorded;
  const SnapshotComparison& as_run = recorded.as_run;
  std::vector<std::string> lines;
  lines.push_back(absl::StrFormat(
      "recorded: %s peak reserved, %d segments, %d alloc retries, %s%s",
      HumanBytes(recorded.peak_reserved_bytes), recorded.segments,
      recorded.alloc_retries,
      recorded.config.empty()
          ? std::string("PyTorch's default settings")
          : absl::StrCat("PYTORCH_CUDA_ALLOC_CONF=", recorded.config),
      recorded.reserved_at_start_bytes == 0
          ? ""
          : absl::StrCat(" (it began with ",
                         HumanBytes(recorded.reserved_at_start_bytes),
                         " reserved; the other candidates start from none)")));
  if (!recorded.as_run_error.empty()) {
    lines.push_back(absl::StrCat(
        result.rows[recorded.row].label,
        " could not be replayed as the GPU ran it: ", recorded.as_run_error));
    return lines;
  }
  lines.push_back(absl::StrFormat(
      "%s replayed as the GPU ran it: %s, %d segments, %d alloc retries, %d "
      "divergences in %d events: %s",
      result.rows[recorded.row].label,
      HumanBytes(recorded.as_run_peak_reserved_bytes), as_run.replayed_segments,
      as_run.replayed_alloc_retries, as_run.divergences, as_run.events_compared,
      recorded.matches ? "matches the recording"
                       : "DIFFERS from the recording"));
  if (as_run.memory_limit_inferred) {
    // A capacity that changed: its largest step bounds the candidates.
    const size_t steps = as_run.memory_limit_steps.size();
    lines.push_back(absl::StrFormat(
        "the recording's out-of-memory retries or failures put the device's "
        "capacity at %s%s: every candidate without a memory limit ran under "
        "it",
        HumanBytes(*as_run.memory_limit_inferred),
        steps == 0 ? std::string()
                   : absl::StrFormat(" at most (it changed over the "
                                     "recording, in %d steps)",
                                     steps)));
  }
  if (const auto& first = as_run.first_divergence) {
    lines.push_back(absl::StrFormat(
        "first divergence at event %d (entry %d): recorded %s; replayed %s",
        first->event, first->entry, first->recorded, first->model));
  }
  return lines;
}

std::string RenderWhatIfText(const WhatIfResult& result) {
  std::string text =
      absl::StrCat("peak live ", HumanBytes(result.peak_live_bytes));
  if (result.device_memory)
    absl::StrAppend(&text, ", device memory ",
                    HumanBytes(*result.device_memory));
  text += "\n\n";
  std::vector<std::vector<std::string>> lines = {WhatIfTableHeader()};
  for (auto& row : WhatIfTableRows(result)) lines.push_back(std::move(row));
  text += FormatTextTable(lines);
  if (result.recorded)
    absl::StrAppend(&text, "\n",
                    absl::StrJoin(WhatIfRecordedLines(result), "\n"), "\n");
  if (result.recommendation) {
    absl::StrAppend(&text, "\nrecommendation:\n  ",
                    absl::StrJoin(result.recommendation->lines, "\n  "), "\n");
  }
  AppendRowNotes(result, text);
  return text;
}

}  // namespace tensormem
