// Real sets squeezed into hard instances (squeezed_instances.h): the packing
// they come with is valid at their capacity, the squeeze takes most of the
// slack away, and every seed gives the same instance again.
#include <algorithm>
#include <string>

#include "gtest/gtest.h"
#include "plan/solver/squeezed_instances.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/solver/optimal_planner.h"

namespace tensormem::solver_internal {
namespace {

BufferSet ModelSet(const std::string& model) {
  absl::StatusOr<BufferSet> set =
      ReadBufferSetCsv(std::string(TENSORMEM_SOURCE_DIR) + "/data/models/" +
                       model + ".buffers.csv");
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *set : BufferSet{};
}

TEST(SqueezedInstancesTest, KnownToFitTightAndDeterministic) {
  for (const char* model : {"resnet18", "mobilenet_v2", "inception_v3"}) {
    const BufferSet set = ModelSet(model);
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      absl::StatusOr<HardInstance> hard = SqueezeRealSet(set, seed);
      ASSERT_TRUE(hard.ok()) << hard.status();
      ASSERT_EQ(hard->offsets.size(), hard->set.buffers.size());
      BufferSet placed = hard->set;
      uint64_t top = 0;
      for (size_t i = 0; i < placed.buffers.size(); ++i) {
        placed.buffers[i].offset = hard->offsets[i];
        top = std::max(top, hard->offsets[i] + placed.buffers[i].size);
      }
      EXPECT_TRUE(CheckPlacement(placed).ok()) << model << " seed " << seed;
      EXPECT_EQ(top, hard->capacity) << model << " seed " << seed;
      // Squeezed: the peak of live bytes is within 10% of the capacity.
      const uint64_t peak = PeakLiveBytes(hard->set);
      EXPECT_LE(peak, hard->capacity);
      EXPECT_GE(static_cast<double>(peak), 0.9 * hard->capacity)
          << model << " seed " << seed;
      absl::StatusOr<HardInstance> again = SqueezeRealSet(set, seed);
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(FormatBufferSetCsv(again->set), FormatBufferSetCsv(hard->set));
      EXPECT_EQ(again->offsets, hard->offsets);
    }
    EXPECT_NE(FormatBufferSetCsv(SqueezeRealSet(set, 1)->set),
              FormatBufferSetCsv(SqueezeRealSet(set, 2)->set))
        << model;
  }
}

TEST(SqueezedInstancesTest, ThePlannerFitsOneAtItsCapacity) {
  absl::StatusOr<HardInstance> hard = SqueezeRealSet(ModelSet("resnet18"), 1);
  ASSERT_TRUE(hard.ok());
  OptimalPlanOptions options;
  options.capacity = hard->capacity;
  options.time_limit_seconds = 30;
  absl::StatusOr<OptimalPlanResult> result = PlanOptimal(hard->set, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_LE(result->total_size, hard->capacity);
  EXPECT_TRUE(CheckPlacement(result->placed).ok());
}

TEST(SqueezedInstancesTest, AnEmptySetGivesAnEmptyInstance) {
  absl::StatusOr<HardInstance> hard = SqueezeRealSet(BufferSet{}, 1);
  ASSERT_TRUE(hard.ok());
  EXPECT_TRUE(hard->set.buffers.empty());
  EXPECT_EQ(hard->capacity, 0u);
}

}  // namespace
}  // namespace tensormem::solver_internal
