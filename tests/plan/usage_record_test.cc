#include "tensormem/plan/usage_record.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tensormem {
namespace {

TEST(UsageRecordTest, HalfOpenBuffersBecomeClosedRecordsAndBack) {
  absl::StatusOr<BufferSet> set =
      ParseBufferSetCsv("id,lower,upper,size\n5,0,2,16\n9,2,3,8\n");
  ASSERT_TRUE(set.ok()) << set.status();
  absl::StatusOr<std::vector<UsageRecord<>>> records = ToUsageRecords(*set);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[0].tensor_size, 16u);
  EXPECT_EQ((*records)[0].first_task, 0u);
  EXPECT_EQ((*records)[0].last_task, 1u);  // [0, 2) -> [0, 1]
  EXPECT_EQ((*records)[1].first_task, 2u);
  // [0, 2) and [2, 3) do not conflict; neither do [0, 1] and [2, 2].
  EXPECT_FALSE((*records)[0].LiveAtSameTime((*records)[1]));

  absl::StatusOr<BufferSet> back = FromUsageRecords(*records);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->buffers[1].lower, 2);
  EXPECT_EQ(back->buffers[1].upper, 3);
  EXPECT_EQ(back->buffers[1].id, 1u);  // records are indexed by position
  EXPECT_EQ(FormatBufferSetCsv(*back),
            "id,first_task,last_task,size\n0,0,1,16\n1,2,2,8\n");
}

TEST(UsageRecordTest, ClosedRecordsTouchingAtOneTaskConflict) {
  const UsageRecord<> a{16, 0, 1};
  const UsageRecord<> b{8, 1, 2};
  EXPECT_TRUE(a.LiveAtSameTime(b));
  absl::StatusOr<BufferSet> set = FromUsageRecords({a, b});
  ASSERT_TRUE(set.ok());
  EXPECT_TRUE(set->buffers[0].LiveAtSameTime(set->buffers[1]));
}

TEST(UsageRecordTest, RejectsBadIntervals) {
  BufferSet set;
  set.buffers.push_back(
      Buffer{.id = 4, .lower = -1, .upper = 2, .size = 8, .offset = {}});
  EXPECT_THAT(ToUsageRecords(set).status().message(),
              ::testing::HasSubstr("buffer 4"));
  EXPECT_FALSE(FromUsageRecords({{8, 3, 2}}).ok());
  EXPECT_FALSE(FromUsageRecords({{8, 0, static_cast<TaskId>(INT64_MAX)}}).ok());
}

TEST(UsageRecordTest, TotalSizeSumsObjects) {
  EXPECT_EQ(TotalSize(ObjectsAssignment<>{{0, 1, 0}, {64, 32}}), 96u);
  EXPECT_EQ(TotalSize(ObjectsAssignment<>{}), 0u);
}

}  // namespace
}  // namespace tensormem
