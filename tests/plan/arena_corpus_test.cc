// The arena planners on real workloads: SOMAS ResNet-50 and IREE MobileNet
// from the shared data (pinned high-water marks, so a behaviour change shows),
// and the PyTorch corpus's buffer sets, where greedy reaches the lower bound.
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "plan/arena_test_util.h"
#include "shared_data.h"

namespace tensormem {
namespace {

struct Planned {
  uint64_t high_water_mark = 0;
  uint64_t lower_bound = 0;
};

Planned PlanBufferSet(const std::string& path, ArenaPlannerKind kind) {
  absl::StatusOr<BufferSet> set = ReadBufferSetCsv(path);
  EXPECT_TRUE(set.ok()) << set.status();
  if (!set.ok()) return {};
  absl::StatusOr<ArenaGraph> graph = ArenaGraphFromBufferSet(*set);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  ArenaPlannerOptions options = testing_arena::TestOptions(kind);
  options.tensor_alignment = 1;
  auto planner = testing_arena::PlanAll(&*graph, options);
  testing_arena::ExpectValidPlan(*planner);
  // The graph keeps every buffer's lifetime, so the bound is the set's own.
  EXPECT_EQ(PeakLiveBytes(ArenaPlanToBufferSet(*planner, ArenaId::kMain)),
            PeakLiveBytes(*set));
  return {planner->high_water_mark(), PeakLiveBytes(*set)};
}

TEST(ArenaCorpusTest, PinnedHighWaterMarksOnIdeallocSets) {
  TENSORMEM_SHARED_DATA_OR_SKIP(data, "idealloc");
  struct Case {
    const char* file;
    uint64_t greedy;
    uint64_t queue;
  } cases[] = {
      {"somas_tensors/resnet50.csv", 1525964460, 1520092676},
      {"iree/iree_mobilenet.csv", 5706112, 5706112},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(PlanBufferSet(data + "/" + c.file, ArenaPlannerKind::kGreedy)
                  .high_water_mark,
              c.greedy)
        << c.file;
    EXPECT_EQ(PlanBufferSet(data + "/" + c.file, ArenaPlannerKind::kQueue)
                  .high_water_mark,
              c.queue)
        << c.file;
  }
}

TEST(ArenaCorpusTest, GreedyReachesTheLowerBoundOnRealModels) {
  const std::filesystem::path models =
      std::filesystem::path(TENSORMEM_SOURCE_DIR) / "data" / "models";
  int planned = 0;
  if (std::filesystem::is_directory(models)) {
    for (const auto& entry : std::filesystem::directory_iterator(models)) {
      const std::string path = entry.path().string();
      if (!path.ends_with(".buffers.csv")) continue;
      const Planned greedy = PlanBufferSet(path, ArenaPlannerKind::kGreedy);
      EXPECT_EQ(greedy.high_water_mark, greedy.lower_bound) << path;
      PlanBufferSet(path, ArenaPlannerKind::kQueue);  // valid, checked inside
      ++planned;
    }
  }
  if (planned == 0) GTEST_SKIP() << "no buffer sets under " << models;
}

}  // namespace
}  // namespace tensormem
