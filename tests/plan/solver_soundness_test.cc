// Soundness of the search's pruning rules: for packings known to fit, the
// search guided by the packing (each node may only place buffers at their
// offset in it) must reach a placement, under every order. A rule that cuts a
// real solution fails here by name, instead of hiding behind restarts.
//
// Known packings: generated hard instances (cut from a full rectangle), the
// bundled challenging sets with a plan the planner found, and greedy plans of
// bundled real sets at their own total size. Each is first pushed down until
// no buffer can move lower on its own, with buffers of one lifetime in the
// order's twin order: the form every rule assumes exists.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plan/solver/feasibility_search.h"
#include "plan/solver/hard_instances.h"
#include "plan/solver/problem.h"
#include "plan/solver/static_orders.h"
#include "shared_data.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/offset_strategies.h"
#include "tensormem/plan/solver/optimal_planner.h"
#include "tensormem/plan/usage_record.h"

namespace tensormem::solver_internal {
namespace {

// Replays `offsets` (per set buffer, a valid packing within `capacity`)
// through the search under `orders` orders, with and without re-ranking.
void ExpectEveryOrderAccepts(const BufferSet& set,
                             const std::vector<uint64_t>& offsets,
                             uint64_t capacity, int orders,
                             const std::string& what) {
  absl::StatusOr<Problem> problem = BuildProblem(set, 1);
  ASSERT_TRUE(problem.ok()) << problem.status();
  BuildOverlaps(*problem);
  std::vector<uint64_t> packing(problem->buffers.size());
  for (size_t i = 0; i < packing.size(); ++i)
    packing[i] = offsets[problem->source_index[i]];
  for (int order = 0; order < orders; ++order) {
    const std::vector<uint64_t> guide =
        PushDownPacking(*problem, packing, StaticOrderRanks(*problem, order));
    for (const bool rerank : {true, false}) {
      FeasibilitySearch search(*problem, order, rerank);
      search.set_guide(&guide);
      const SearchOutcome outcome =
          search.Run(capacity, {.node_limit = 2'000'000});
      EXPECT_EQ(outcome, SearchOutcome::kFound)
          << what << ", order " << order << (rerank ? "" : " (static ranks)")
          << ": a rule cut the known packing after " << search.deepest()
          << " of " << guide.size() << " buffers were placed: "
          << PruneRuleName(search.deepest_rejection());
    }
  }
}

TEST(SolverSoundnessTest, GeneratedHardInstancesAreNeverCut) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const HardInstance hard = MakeHardInstance(seed, {});
    ASSERT_EQ(PeakLiveBytes(hard.set), hard.capacity) << "seed " << seed;
    BufferSet placed = hard.set;
    for (size_t i = 0; i < placed.buffers.size(); ++i)
      placed.buffers[i].offset = hard.offsets[i];
    ASSERT_TRUE(CheckPlacement(placed).ok()) << "seed " << seed;
    ExpectEveryOrderAccepts(hard.set, hard.offsets, hard.capacity,
                            kBaseOrderCount + 2,
                            "hard instance " + std::to_string(seed));
  }
}

BufferSet ReadSet(const std::string& path) {
  absl::StatusOr<BufferSet> set = ReadBufferSetCsv(path);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *set : BufferSet{};
}

TEST(SolverSoundnessTest, PlansOfTheChallengingSetsAreNeverCut) {
  // The planner's own plan, replayed under every other order and tie rule.
  TENSORMEM_SHARED_DATA_OR_SKIP(folder, "minimalloc/challenging");
  for (const char* name : {"A", "C", "E", "F"}) {
    const BufferSet set =
        ReadSet(folder + "/" + std::string(name) + ".1048576.csv");
    OptimalPlanOptions options;
    options.capacity = 1048576;
    options.time_limit_seconds = 60;
    absl::StatusOr<OptimalPlanResult> result = PlanOptimal(set, options);
    ASSERT_TRUE(result.ok()) << name << ": " << result.status();
    std::vector<uint64_t> offsets;
    for (const Buffer& b : result->placed.buffers) offsets.push_back(*b.offset);
    ExpectEveryOrderAccepts(set, offsets, 1048576, kBaseOrderCount + 2,
                            std::string("challenging ") + name);
  }
}

TEST(SolverSoundnessTest, GreedyPlansOfRealSetsAreNeverCut) {
  // A greedy plan is a known packing at its own total size. The shared
  // sets join where this machine has them.
  std::vector<std::string> paths;
  for (const char* model : {"resnet18", "mobilenet_v2"}) {
    paths.push_back(std::string(TENSORMEM_SOURCE_DIR) + "/data/models/" +
                    model + ".buffers.csv");
  }
  for (const char* shared : {"idealloc/iree/iree_mobilenet.csv",
                             "idealloc/somas_tensors/resnet50.csv"}) {
    if (const std::string path = SharedDataPath(shared); !path.empty())
      paths.push_back(path);
  }
  for (const std::string& path : paths) {
    BufferSet set = ReadSet(path);
    for (Buffer& b : set.buffers) b.offset.reset();
    absl::StatusOr<std::vector<UsageRecord<>>> records = ToUsageRecords(set);
    ASSERT_TRUE(records.ok()) << path << ": " << records.status();
    absl::StatusOr<OffsetsAssignment> greedy = GreedyBySizeOffsets(*records);
    ASSERT_TRUE(greedy.ok()) << path << ": " << greedy.status();
    uint64_t total = 0;
    for (size_t i = 0; i < set.buffers.size(); ++i) {
      if (set.buffers[i].size > 0)
        total = std::max(total, greedy->offsets[i] + set.buffers[i].size);
    }
    ExpectEveryOrderAccepts(set, greedy->offsets, total, kBaseOrderCount, path);
  }
}

}  // namespace
}  // namespace tensormem::solver_internal
