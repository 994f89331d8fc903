#include "tensormem/core/checked_math.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace tensormem {
namespace {

TEST(CheckedMathTest, DetectsOverflow) {
  EXPECT_EQ(CheckedAdd(1, 2), 3u);
  EXPECT_FALSE(CheckedAdd(UINT64_MAX, 1).has_value());
  EXPECT_EQ(CheckedMul(1 << 20, 1 << 20), uint64_t{1} << 40);
  EXPECT_FALSE(CheckedMul(uint64_t{1} << 33, uint64_t{1} << 33).has_value());
  EXPECT_FALSE(CheckedRoundUp(UINT64_MAX - 10, 256).has_value());
}

TEST(CheckedMathTest, RoundsAndTakesLogs) {
  EXPECT_EQ(CheckedRoundUp(1, 256), 256u);
  EXPECT_EQ(CheckedRoundUp(512, 256), 512u);
  EXPECT_EQ(RoundDown(1000, 256), 768u);
  EXPECT_EQ(Log2Floor(1), 0);
  EXPECT_EQ(Log2Floor(255), 7);
  EXPECT_EQ(Log2Floor(256), 8);
  EXPECT_TRUE(IsPowerOfTwo(4096));
  EXPECT_FALSE(IsPowerOfTwo(0));
  EXPECT_FALSE(IsPowerOfTwo(96));
}

}  // namespace
}  // namespace tensormem
