#include "tensormem/plan/task_profiles.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plan/tflite_fixtures.h"
#include "tensormem/plan/reallocation_graph.h"

namespace tensormem {
namespace {

using ::tensormem::testing::ChainRecords;
using ::tensormem::testing::ComplexRecords;
using ::tensormem::testing::OneRecord;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

using Profiles = std::vector<TaskProfile>;

TEST(TaskProfileTest, MatchesTflite) {
  EXPECT_THAT(CalculateTaskProfiles({}), IsEmpty());
  EXPECT_THAT(CalculatePositionalMaximums({}), IsEmpty());

  EXPECT_EQ(CalculateTaskProfiles(OneRecord()), (Profiles{{0}, {0}}));
  EXPECT_THAT(CalculatePositionalMaximums(OneRecord()), ElementsAre(16));

  EXPECT_EQ(CalculateTaskProfiles(ChainRecords()),
            (Profiles{{0}, {0, 1}, {2, 1}, {2, 3}, {3, 4}, {4}}));
  EXPECT_THAT(CalculatePositionalMaximums(ChainRecords()), ElementsAre(64, 32));

  EXPECT_EQ(CalculateTaskProfiles(ComplexRecords()), (Profiles{{0},
                                                               {0, 1},
                                                               {1, 2},
                                                               {1, 3, 2},
                                                               {1, 3, 2, 4},
                                                               {5, 3, 2, 4},
                                                               {5, 6},
                                                               {5, 6, 7},
                                                               {8, 6, 7},
                                                               {8}}));
  EXPECT_THAT(CalculatePositionalMaximums(ComplexRecords()),
              ElementsAre(64, 32, 8, 8));
}

TEST(TaskProfileTest, LowerBounds) {
  EXPECT_EQ(SharedObjectsLowerBound(ComplexRecords()), 112u);
  EXPECT_EQ(MaxBreadth(ComplexRecords()), 96u);  // task 5: 64 + 16 + 8 + 8
  EXPECT_EQ(SharedObjectsLowerBound({}), 0u);
  EXPECT_EQ(MaxBreadth({}), 0u);
}

TEST(TaskProfileTest, SegmentsMergeTasksWithTheSameLiveSet) {
  // Tasks 0..9 of tensor 0 and 3..5 of tensor 1: runs [0,2], [3,5], [6,9];
  // a gap at 10..19 is left out.
  const std::vector<UsageRecord<>> records = {
      {8, 0, 9}, {16, 3, 5}, {4, 20, 20}};
  const SegmentProfiles segments = CalculateSegmentProfiles(records);
  EXPECT_THAT(segments.first_tasks, ElementsAre(0, 3, 6, 20));
  EXPECT_EQ(segments.profiles, (Profiles{{0}, {1, 0}, {0}, {2}}));
  EXPECT_EQ(CountSegmentProfileEntries(records), 5u);
}

TEST(ReallocationGraphTest, MatchesTflite) {
  absl::StatusOr<UsageGraph> empty = ReallocationGraph({});
  ASSERT_TRUE(empty.ok());
  EXPECT_THAT(*empty, IsEmpty());

  absl::StatusOr<UsageGraph> pair = ReallocationGraph({{1}, {}});
  ASSERT_TRUE(pair.ok());
  EXPECT_EQ(*pair, (UsageGraph{{}, {}}));

  absl::StatusOr<UsageGraph> chain =
      ReallocationGraph({{1}, {2}, {3}, {4}, {}});
  ASSERT_TRUE(chain.ok());
  EXPECT_EQ(*chain, (UsageGraph{{2, 3, 4}, {3, 4}, {0, 4}, {0, 1}, {0, 1, 2}}));
}

TEST(ReallocationGraphTest, OnlyVerticesReachableFromAllChildren) {
  // 0 -> {1, 2}; 1 -> 3; 2 -> 3, 4. Only 3 is reached from both children.
  absl::StatusOr<UsageGraph> graph =
      ReallocationGraph({{1, 2}, {3}, {3, 4}, {}, {}});
  ASSERT_TRUE(graph.ok());
  EXPECT_THAT((*graph)[0], ElementsAre(3));
  EXPECT_THAT((*graph)[3], ElementsAre(0));
  EXPECT_FALSE(ReallocationGraph({{5}}).ok());
}

}  // namespace
}  // namespace tensormem
