// Every snapshot of PyTorch's own caching allocator committed under
// bench/results/gpu/*/snapshots/ (found when the test runs, so each new GPU
// run's recordings are covered) replays under the pytorch policy, with the
// snapshot's own settings, exactly as the GPU ran it: the same peak of
// reserved bytes, the same segments, every event as recorded.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tensormem/core/units.h"
#include "tensormem/trace/importers.h"
#include "tensormem/trace/replay.h"
#include "tensormem/trace/replay_allocator.h"
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
std::string RunAndFileName(const testing::TestParamInfo<std::string>& info) {
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
                         testing::ValuesIn(CommittedSnapshots()),
                         RunAndFileName);

// The training loops recorded on the GPU (train-*.pickle.gz) repeat.
std::vector<std::string> CommittedTrainingLoops() {
  std::vector<std::string> loops;
  for (const std::string& path : CommittedSnapshots()) {
    if (fs::path(path).filename().string().starts_with("train-"))
      loops.push_back(path);
  }
  return loops;
}

struct LoopReplay {
  ReplayMetrics tight, planned;
};

// `path` replayed on vmm under tight and under planned (planning inline),
// both with `config` added.
std::optional<LoopReplay> ReplayTightAndPlanned(const std::string& path,
                                                const std::string& config) {
  absl::StatusOr<PytorchImport> read = ReadPytorchSnapshot(path);
  EXPECT_TRUE(read.ok()) << read.status();
  if (!read.ok()) return std::nullopt;
  absl::StatusOr<PreparedTrace> trace = PreparedTrace::Prepare(read->trace);
  EXPECT_TRUE(trace.ok()) << trace.status();
  if (!trace.ok()) return std::nullopt;
  LoopReplay replays;
  for (ReplayMetrics* metrics : {&replays.tight, &replays.planned}) {
    const bool planned = metrics == &replays.planned;
    AllocatorSpec spec;
    spec.policy = planned ? "planned" : "tight";
    spec.config = planned ? absl::StrCat("planning:inline",
                                         config.empty() ? "" : ",", config)
                          : config;
    spec.sub_allocator = "vmm";
    absl::StatusOr<ReplayTarget> target = CreateReplayTarget(spec);
    EXPECT_TRUE(target.ok()) << target.status();
    if (!target.ok()) return std::nullopt;
    absl::StatusOr<ReplayResult> replayed = Replay(*trace, *target, {});
    EXPECT_TRUE(replayed.ok()) << replayed.status();
    if (!replayed.ok()) return std::nullopt;
    EXPECT_EQ(replayed->metrics.failed_allocs, 0) << spec.policy;
    *metrics = replayed->metrics;
  }
  return replays;
}

// Holding the pool's peak (vmm's default), planned must never reserve more
// than tight (issue: a plan that left a step's output to the fallback held
// 1.09x live on GPT-2), and it cannot take over without raising that peak.
TEST(GpuSnapshotsTest, PlannedNeverReservesMoreThanTightOnRealTrainingLoops) {
  const std::vector<std::string> loops = CommittedTrainingLoops();
  EXPECT_GE(loops.size(), 2u);  // ResNet-50 and GPT-2, run 5
  for (const std::string& path : loops) {
    SCOPED_TRACE(path);
    const std::optional<LoopReplay> replays = ReplayTightAndPlanned(path, "");
    ASSERT_TRUE(replays.has_value());
    EXPECT_LE(replays->planned.peak_pool_bytes,
              replays->tight.peak_pool_bytes + 2 * kMiB)
        << "planned over tight";
    // Each loop is found, and the replay says why no plan serves: taking
    // over would raise the pool above tight's peak (docs/planned.md).
    ASSERT_TRUE(replays->planned.stats.has_value());
    const std::optional<AllocatorStats::LoopPlans>& plans =
        replays->planned.stats->loop_plans;
    ASSERT_TRUE(plans.has_value());
    EXPECT_EQ(plans->found, 1);
    EXPECT_EQ(plans->taken_over, 0);
    EXPECT_EQ(plans->without_room, 1);
  }
}

// Keeping holes while memory lasts (decommit:on_pressure, the default on
// cuda-vmm, where a decommit waits for the device), the fallback's peak
// leaves the plan room: it serves both loops within 1.01x their live bytes
// from the take-over on (1.0025x and 1.0057x), and the peak stays tight's.
// Inline, the placement's search counts its time in work, so the figures
// are the same under ASan and on a busy machine (on the wall clock GPT-2's
// was 1.0166x under ASan).
TEST(GpuSnapshotsTest, PlannedServesRealTrainingLoopsWhenHolesStay) {
  const std::vector<std::string> loops = CommittedTrainingLoops();
  EXPECT_GE(loops.size(), 2u);
  for (const std::string& path : loops) {
    SCOPED_TRACE(path);
    const std::optional<LoopReplay> replays =
        ReplayTightAndPlanned(path, "decommit:on_pressure");
    ASSERT_TRUE(replays.has_value());
    const ReplayMetrics& planned = replays->planned;
    EXPECT_LE(planned.peak_pool_bytes,
              replays->tight.peak_pool_bytes + 2 * kMiB);
    ASSERT_TRUE(planned.stats.has_value() &&
                planned.stats->loop_plans.has_value());
    EXPECT_EQ(planned.stats->loop_plans->taken_over, 1);
    EXPECT_GE(planned.planned_iterations, 2);
    ASSERT_TRUE(planned.steady_ratio().has_value());
    EXPECT_LE(*planned.steady_ratio(), 1.01);
    // Less than tight holds at its end, which keeps every hole.
    EXPECT_LT(*planned.steady_pool_bytes, replays->tight.peak_pool_bytes);
  }
}

TEST(GpuSnapshotsTest, TheCommittedRunsHaveSnapshots) {
  // The first run with snapshots recorded six settings.
  EXPECT_GE(CommittedSnapshots().size(), 6u);
}

}  // namespace
}  // namespace tensormem
