#include "tensormem/plan/buffer_set.h"

#include "gtest/gtest.h"

namespace tensormem {
namespace {

TEST(BufferSetTest, ReadsHalfOpenColumnsInAnyOrder) {
  absl::StatusOr<BufferSet> set =
      ParseBufferSetCsv("size,upper,id,lower\n8,3,7,1\n4,2,9,0\n");
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_EQ(set->buffers.size(), 2u);
  EXPECT_EQ(set->buffers[0].id, 7u);
  EXPECT_EQ(set->buffers[0].lower, 1);
  EXPECT_EQ(set->buffers[0].upper, 3);
  EXPECT_EQ(set->buffers[0].size, 8u);
  EXPECT_EQ(set->convention, IntervalConvention::kHalfOpen);
}

TEST(BufferSetTest, ClosedIntervalsBecomeHalfOpenAndRoundTrip) {
  const std::string text = "first_task,last_task,size\n0,1,16\n1,2,8\n";
  absl::StatusOr<BufferSet> set = ParseBufferSetCsv(text);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->buffers[1].id, 1u);  // row order when there is no id column
  EXPECT_EQ(set->buffers[1].upper, 3);
  EXPECT_TRUE(
      set->buffers[0].LiveAtSameTime(set->buffers[1]));  // touch at task 1
  EXPECT_EQ(FormatBufferSetCsv(*set),
            "id,first_task,last_task,size\n0,0,1,16\n1,1,2,8\n");
}

TEST(BufferSetTest, WritesOffsetsAndExtraColumns) {
  absl::StatusOr<BufferSet> set =
      ParseBufferSetCsv("id,lower,upper,size,offset\n3,0,2,5,64\n");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(FormatBufferSetCsv(*set, {{"object", {2}}}),
            "id,lower,upper,size,offset,object\n3,0,2,5,64,2\n");
}

TEST(BufferSetTest, ASetPlacedInPartRoundTrips) {
  const std::string text = "id,lower,upper,size,offset\n3,0,2,5,64\n4,1,3,8,\n";
  absl::StatusOr<BufferSet> set = ParseBufferSetCsv(text);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->buffers[0].offset, 64u);
  EXPECT_FALSE(set->buffers[1].offset.has_value());
  EXPECT_EQ(FormatBufferSetCsv(*set), text);
  EXPECT_FALSE(
      ParseBufferSetCsv("id,lower,upper,size,offset\n3,0,2,5,x\n").ok());
}

TEST(BufferSetTest, TextualIdsAreKeptAndWrittenBack) {
  const std::string text = "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\n";
  absl::StatusOr<BufferSet> set = ParseBufferSetCsv(text);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->buffers[1].id, 1u);
  EXPECT_EQ(set->names, (std::vector<std::string>{"b1", "b2"}));
  EXPECT_EQ(FormatBufferSetCsv(*set), text);
  absl::StatusOr<BufferSet> duplicate =
      ParseBufferSetCsv("id,lower,upper,size\nb1,0,3,4\nb1,3,9,4\n", "t.csv");
  ASSERT_FALSE(duplicate.ok());
  EXPECT_NE(duplicate.status().message().find("t.csv:3: duplicate id b1"),
            std::string::npos);
  absl::StatusOr<BufferSet> mixed =
      ParseBufferSetCsv("id,lower,upper,size\n1,0,3,4\nb1,3,9,4\n", "t.csv");
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("t.csv:3: id 'b1'"),
            std::string::npos);
}

TEST(BufferSetTest, ErrorsNameTheLineAndTheValue) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : {
           Case{"id,lower,upper,size\n1,0,2,x\n", "t.csv:2: size 'x' is not"},
           Case{"id,lower,upper,size\n1,0,2,4\n1,3,4,4\n",
                "t.csv:3: duplicate id 1"},
           Case{"id,lower,upper,size\n1,5,5,4\n",
                "t.csv:2: buffer 1: upper 5 must exceed"},
           Case{"first_task,last_task,size\n4,2,1\n",
                "t.csv:2: buffer 0: first_task 4 is after"},
           Case{"id,lower,upper,size\n1,-1,2,4\n", "t.csv:2: lower '-1'"},
           Case{"id,lower,upper,size\n1,0,2\n",
                "t.csv:2: expected 4 fields, found 3"},
           Case{"id,size\n", "t.csv:1: header must name"},
           Case{"", "no header row"},
       }) {
    absl::StatusOr<BufferSet> set = ParseBufferSetCsv(c.text, "t.csv");
    ASSERT_FALSE(set.ok()) << c.text;
    EXPECT_NE(set.status().message().find(c.message), std::string::npos)
        << set.status();
  }
}

TEST(BufferSetTest, PeakLiveBytesOfSizesNear2To63DoesNotOverflow) {
  // Found by the CSV fuzz target: the sum of live sizes overflowed int64.
  absl::StatusOr<BufferSet> set = ParseBufferSetCsv(
      "id,lower,upper,size\n0,0,2,9223372036854775807\n1,1,3,22282\n");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(PeakLiveBytes(*set), uint64_t{9223372036854775807} + 22282);
  absl::StatusOr<BufferSet> three = ParseBufferSetCsv(
      "id,lower,upper,size\n0,0,2,9223372036854775807\n"
      "1,0,2,9223372036854775807\n2,0,2,9223372036854775807\n");
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ(PeakLiveBytes(*three), UINT64_MAX);  // saturates
}

TEST(BufferSetTest, PeakLiveBytesTreatsUpperAsExclusive) {
  absl::StatusOr<BufferSet> set =
      ParseBufferSetCsv("id,lower,upper,size\n0,0,2,10\n1,2,4,20\n2,1,3,5\n");
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(PeakLiveBytes(*set), 25u);  // at t=2: buffers 1 and 2
  EXPECT_EQ(PeakLiveBytes(BufferSet{}), 0u);
}

}  // namespace
}  // namespace tensormem
