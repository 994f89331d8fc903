// A transformer's training recorded on a GPU by others (cs336-lm.train.100
// in ../shared/data/pytorch-snapshots: three iterations whose live bytes
// peak at the same height) as a buffer set for the optimal planner. Before
// the split start (plan/solver/peak_split.h) it stayed at the greedy plan's
// 1.0112x the peak of live bytes. Skipped, with a message, where the shared
// data is absent.
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "plan/solver/peak_split.h"
#include "shared_data.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/solver/optimal_planner.h"
#include "tensormem/trace/importers.h"

namespace tensormem {
namespace {

std::filesystem::path SnapshotPath(const std::string& name) {
  return SharedDataDir() / "pytorch-snapshots" / (name + ".pickle");
}

// The snapshot's blocks as a buffer set (blocks never freed live to the end).
absl::StatusOr<BufferSet> SnapshotBufferSet(const std::filesystem::path& path) {
  absl::StatusOr<PytorchImport> read = ReadPytorchSnapshot(path.string());
  if (!read.ok()) return read.status();
  return TraceToBufferSet(read->trace);
}

TEST(SharedSnapshotPlanTest, TrainingOverSeveralIterationsIsSplitAtItsPeak) {
  const std::filesystem::path path = SnapshotPath("cs336-lm.train.100");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
  absl::StatusOr<BufferSet> set = SnapshotBufferSet(path);
  ASSERT_TRUE(set.ok()) << set.status();

  OptimalPlanOptions greedy;
  greedy.time_limit_seconds = 0;
  absl::StatusOr<OptimalPlanResult> start = PlanOptimal(*set, greedy);
  ASSERT_TRUE(start.ok()) << start.status();
  std::optional<std::vector<uint64_t>> split =
      solver_internal::SplitAtFirstPeak(*set, {}, /*seconds=*/12);
  ASSERT_TRUE(split.has_value());
  BufferSet placed = *set;
  uint64_t top = 0;
  for (size_t i = 0; i < placed.buffers.size(); ++i) {
    placed.buffers[i].offset = (*split)[i];
    top = std::max(top, (*split)[i] + placed.buffers[i].size);
  }
  EXPECT_TRUE(CheckPlacement(placed, 1).ok());
  // 1.0022x here, against the greedy plan's 1.0112x. Both parts run against
  // the clock, and under sanitizers they do several times less in it (1.03x
  // under ASan): the planner then keeps the greedy plan, which is all the
  // split promises.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  EXPECT_LT(top, start->total_size);
  EXPECT_LE(static_cast<double>(top), 1.005 * start->lower_bound);
#endif
}

// The same training recorded in bf16 (4,404 buffers): too many for the
// search alone, so the large-set steps come first, and they end at 1.0031x;
// the search after them reaches the bound (7.1 s with two threads here,
// unloaded; the budget leaves room for a loaded machine).
TEST(SharedSnapshotPlanTest,
     MidSizedTrainingReachesTheBoundAfterLargeSetSteps) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a search of seconds, several times slower under sanitizers";
#endif
  const std::filesystem::path path = SnapshotPath("cs336-lm.train.200.bf16");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
  absl::StatusOr<BufferSet> set = SnapshotBufferSet(path);
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_GT(set->buffers.size(), 4096u);

  OptimalPlanOptions options;
  options.threads = 2;
  options.time_limit_seconds = 30;
  absl::StatusOr<OptimalPlanResult> plan = PlanOptimal(*set, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(CheckPlacement(plan->placed, 1).ok());
  EXPECT_LE(static_cast<double>(plan->total_size), 1.001 * plan->lower_bound)
      << plan->method << " after " << plan->seconds << " s";
}

}  // namespace
}  // namespace tensormem
