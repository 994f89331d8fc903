// Aliases of allocator options: one table holds them with their keys, so
// flags, the environment, Python and the plug-ins accept them alike.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/allocator_spec.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

TEST(AllocatorOptionAliasesTest, AliasesSetTheirKey) {
  AllocatorSpec spec;
  ASSERT_TRUE(SetAllocatorOption(spec, "allow_growth", "false").ok());
  EXPECT_FALSE(spec.growth);
  ASSERT_TRUE(SetAllocatorOption(spec, "garbage_collection", "true").ok());
  EXPECT_TRUE(spec.garbage_collection);
  // An alias's bad value is reported under the key it stands for.
  EXPECT_THAT(SetAllocatorOption(spec, "allow_growth", "maybe").message(),
              HasSubstr("growth"));
}

TEST(AllocatorOptionAliasesTest, EachAliasNamesItsOwnKey) {
  EXPECT_EQ(CanonicalAllocatorOption("allow_growth"), "growth");
  EXPECT_EQ(CanonicalAllocatorOption("gc"), "gc");
  EXPECT_EQ(CanonicalAllocatorOption("nonsense"), "nonsense");
  size_t aliases = 0;
  for (const AllocatorOptionInfo& info : AllocatorOptions()) {
    if (info.alias.empty()) continue;
    ++aliases;
    EXPECT_EQ(CanonicalAllocatorOption(info.alias), info.key);
  }
  EXPECT_EQ(aliases, 2u);
}

}  // namespace
}  // namespace tensormem
