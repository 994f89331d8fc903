// The real-model corpus under data/models: every trace parses and replays with
// no failure, every exported buffer set can be placed and passes the checker.
// Runs without PyTorch.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tensormem/core/units.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/offset_strategies.h"
#include "tensormem/plan/usage_record.h"
#include "tensormem/trace/replay.h"
#include "tensormem/trace/replay_allocator.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem {
namespace {

std::vector<std::string> CorpusFiles(std::string_view suffix) {
  std::vector<std::string> paths;
  const std::filesystem::path directory =
      std::filesystem::path(TENSORMEM_SOURCE_DIR) / "data" / "models";
  if (!std::filesystem::is_directory(directory)) return paths;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    const std::string path = entry.path().string();
    if (path.size() >= suffix.size() &&
        path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
      paths.push_back(path);
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// Replays `path` into a growing BFC over simulated address space (nothing is
// touched, so even training traces replay in milliseconds).
void ExpectReplaysWithoutFailure(const std::string& path) {
  SCOPED_TRACE(path);
  absl::StatusOr<Trace> trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status();
  absl::StatusOr<PreparedTrace> prepared = PreparedTrace::Prepare(*trace);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  absl::StatusOr<ReplayTarget> target = CreateReplayTarget(AllocatorSpec{});
  ASSERT_TRUE(target.ok()) << target.status();
  absl::StatusOr<ReplayResult> result = Replay(*prepared, *target, {});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->metrics.failed_allocs, 0);
  EXPECT_GT(result->metrics.allocs, 50);
  EXPECT_GT(result->metrics.frees, result->metrics.allocs / 2);
  EXPECT_GE(result->metrics.peak_pool_bytes, result->metrics.peak_live_bytes);
  EXPECT_GT(result->metrics.peak_live_bytes, 100 * kKiB);
}

TEST(ModelCorpusTest, HasTracesOfAtLeastEightModels) {
  std::vector<std::string> models;
  for (const std::string& path : CorpusFiles(".infer_b1.trace.gz")) {
    models.push_back(std::filesystem::path(path).filename().string());
  }
  EXPECT_GE(models.size(), 8u);
  EXPECT_GE(CorpusFiles(".train_b8.trace.gz").size(), 8u);
  EXPECT_GE(CorpusFiles(".buffers.csv").size(), 8u);
}

TEST(ModelCorpusTest, EveryTraceReplaysWithoutFailure) {
  const std::vector<std::string> traces = CorpusFiles(".trace.gz");
  ASSERT_FALSE(traces.empty());
  for (const std::string& path : traces) ExpectReplaysWithoutFailure(path);
}

TEST(ModelCorpusTest, EveryBufferSetIsPlacedWithinBoundsAndPassesTheChecker) {
  const std::vector<std::string> sets = CorpusFiles(".buffers.csv");
  ASSERT_FALSE(sets.empty());
  for (const std::string& path : sets) {
    SCOPED_TRACE(path);
    absl::StatusOr<BufferSet> set = ReadBufferSetCsv(path);
    ASSERT_TRUE(set.ok()) << set.status();
    ASSERT_GT(set->buffers.size(), 20u);
    absl::StatusOr<std::vector<UsageRecord<>>> records = ToUsageRecords(*set);
    ASSERT_TRUE(records.ok()) << records.status();
    absl::StatusOr<OffsetsAssignment> plan = GreedyBySizeOffsets(*records, 64);
    ASSERT_TRUE(plan.ok()) << plan.status();
    uint64_t total = 0;
    for (size_t i = 0; i < set->buffers.size(); ++i) {
      set->buffers[i].offset = plan->offsets[i];
      total = std::max(total, plan->offsets[i] + set->buffers[i].size);
    }
    EXPECT_TRUE(CheckPlacement(*set, 64).ok()) << CheckPlacement(*set, 64);
    EXPECT_GE(total, PeakLiveBytes(*set));
  }
}

}  // namespace
}  // namespace tensormem
