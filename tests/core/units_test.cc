#include "tensormem/core/units.h"

#include "gtest/gtest.h"

namespace tensormem {
namespace {

TEST(ParseByteSizeTest, AcceptsPlainBytesAndBinarySuffixes) {
  EXPECT_EQ(*ParseByteSize("4096"), 4096u);
  EXPECT_EQ(*ParseByteSize("64K"), 64 * kKiB);
  EXPECT_EQ(*ParseByteSize("512M"), 512 * kMiB);
  EXPECT_EQ(*ParseByteSize("2GiB"), 2 * kGiB);
  EXPECT_EQ(*ParseByteSize("1TB"), kTiB);
  EXPECT_EQ(*ParseByteSize("3kb"), 3 * kKiB);
  EXPECT_EQ(*ParseByteSize("1.5G"), 3 * kGiB / 2);
  EXPECT_EQ(*ParseByteSize(" 7 B "), 7u);
  EXPECT_EQ(*ParseByteSize("4096.0"), 4096u);  // a whole float, as JSON has it
}

TEST(ParseByteSizeTest, RejectsMalformedAndOverflowingSizes) {
  for (const char* bad : {"", "M", "12X", "1.2.3", "-5", "5 MiBs",
                          "99999999999999T", "1.5", "0.5B"}) {
    absl::StatusOr<uint64_t> parsed = ParseByteSize(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.status().message().find("invalid size"),
              std::string::npos);
  }
}

TEST(HumanBytesTest, PicksTheLargestUnitBelow1024) {
  EXPECT_EQ(HumanBytes(0), "0B");
  EXPECT_EQ(HumanBytes(1023), "1023B");
  EXPECT_EQ(HumanBytes(1536), "1.50KiB");
  EXPECT_EQ(HumanBytes(80 * kGiB), "80.00GiB");
}

}  // namespace
}  // namespace tensormem
