#include "cli/bench_snapshots.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "absl/status/statusor.h"
#include "tensormem/trace/trace_input.h"
#include "tensormem/trace/whatif.h"

namespace tensormem::cli {
namespace {

namespace fs = std::filesystem;

// The file's name without .pickle or .pickle.gz; empty for other files.
std::string SnapshotName(const fs::path& path) {
  const std::string name = path.filename().string();
  for (const std::string_view suffix : {".pickle", ".pickle.gz"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix))
      return name.substr(0, name.size() - suffix.size());
  }
  return "";
}

absl::StatusOr<SnapshotRow> BenchSnapshot(const fs::path& path) {
  absl::StatusOr<TraceInput> input = ReadTraceInput(path.string());
  if (!input.ok()) return input.status();
  absl::StatusOr<PreparedTrace> trace = PreparedTrace::Prepare(input->trace);
  if (!trace.ok()) return trace.status();
  WhatIfOptions options;
  options.min_limit = false;
  options.measure_speed = false;
  if (input->pytorch_details)
    options.recording = &input->pytorch_details->recording;
  absl::StatusOr<WhatIfResult> result =
      RunWhatIf(*trace, BenchAllocators(), options);
  if (!result.ok()) return result.status();
  SnapshotRow row;
  row.name = SnapshotName(path);
  row.peak_live = result->peak_live_bytes;
  row.recorded_ratio = RecordedOverLive(*result);
  row.pytorch_matches = row.recorded_ratio && result->recorded->matches;
  // The recording's own settings may add a row: find each by its label.
  for (const WhatIfCandidate& candidate : BenchAllocators()) {
    const auto it = std::find_if(
        result->rows.begin(), result->rows.end(),
        [&](const WhatIfRow& r) { return r.label == candidate.label; });
    row.allocator_ratios.push_back(
        it == result->rows.end() ? std::nullopt
                                 : std::optional(it->metrics.fragmentation));
  }
  return row;
}

}  // namespace

std::vector<SnapshotRow> BenchSnapshots(const std::string& folder) {
  std::vector<fs::path> paths;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(folder, error)) {
    if (entry.is_regular_file() && !SnapshotName(entry.path()).empty())
      paths.push_back(entry.path());
  }
  if (error) {
    std::fprintf(stderr, "tensormem bench: %s: %s\n", folder.c_str(),
                 error.message().c_str());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<SnapshotRow> rows;
  for (const fs::path& path : paths) {
    absl::StatusOr<SnapshotRow> row = BenchSnapshot(path);
    if (!row.ok()) {
      std::fprintf(stderr, "tensormem bench: skipping %s: %s\n",
                   path.string().c_str(),
                   std::string(row.status().message()).c_str());
      continue;
    }
    rows.push_back(*std::move(row));
  }
  return rows;
}

}  // namespace tensormem::cli
