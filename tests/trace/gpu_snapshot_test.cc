// Every snapshot of PyTorch's own caching allocator committed under
// bench/results/gpu/*/snapshots/ (found when the test runs, so each new GPU
// run's recordings are covered) replays under the pytorch policy, with the
// snapshot's own settings, exactly as the GPU ran it: the same peak of
// reserved bytes, the same segments, every event as recorded.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tensormem/trace/importers.h"
#include "tensormem/trace/snapshot_replay.h"

namespace tensormem {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> CommittedSnapshots() {
  std::vector<std::string> paths;
  const fs::path runs = fs::path(TENSORMEM_SOURCE_DIR) / "bench/results/gpu";
  std::error_code error;
  for (const fs::directory_entry& run : fs::directory_iterator(runs, error)) {
    const fs::path folder = run.path() / "snapshots";
    if (!fs::is_directory(folder)) continue;
    for (const fs::directory_entry& file : fs::directory_iterator(folder)) {
      if (file.path().string().ends_with(".pickle.gz"))
        paths.push_back(file.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// The test's name for a snapshot: its run and file, as gtest accepts them.
std::string NameOf(const testing::TestParamInfo<std::string>& info) {
  const fs::path path(info.param);
  std::string name = path.parent_path().parent_path().filename().string() +
                     "_" + path.filename().string();
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
  return name;
}

class GpuSnapshotTest : public testing::TestWithParam<std::string> {};

TEST_P(GpuSnapshotTest, ReplaysExactlyAsRecorded) {
  absl::StatusOr<PytorchImport> read = ReadPytorchSnapshot(GetParam());
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->recording.has_segment_events());
  absl::StatusOr<PreparedTrace> trace = PreparedTrace::Prepare(read->trace);
  ASSERT_TRUE(trace.ok()) << trace.status();
  AllocatorSpec spec;
  spec.policy = "pytorch";  // configured by the snapshot's own settings
  absl::StatusOr<SnapshotReplayResult> result =
      ReplaySnapshot(*trace, read->recording, spec, {}, /*verify=*/true);
  ASSERT_TRUE(result.ok()) << result.status();
  const SnapshotComparison& comparison = result->comparison;
  EXPECT_EQ(comparison.config, read->recording.config.value_or(""));
  EXPECT_EQ(result->replay.metrics.peak_pool_bytes,
            comparison.recorded_peak_reserved_bytes);
  EXPECT_EQ(comparison.replayed_alloc_retries,
            comparison.recorded_alloc_retries);
  EXPECT_EQ(comparison.replayed_segments, comparison.recorded_segments);
  EXPECT_EQ(comparison.events_compared, result->replay.metrics.events);
  EXPECT_EQ(comparison.divergences, 0)
      << "first divergence at event " << comparison.first_divergence->event
      << "\n  recorded: " << comparison.first_divergence->recorded
      << "\n  replayed: " << comparison.first_divergence->model;
}

INSTANTIATE_TEST_SUITE_P(Committed, GpuSnapshotTest,
                         testing::ValuesIn(CommittedSnapshots()), NameOf);

TEST(GpuSnapshotsTest, TheCommittedRunsHaveSnapshots) {
  // The first run with snapshots recorded six settings.
  EXPECT_GE(CommittedSnapshots().size(), 6u);
}

}  // namespace
}  // namespace tensormem
