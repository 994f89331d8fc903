// Tests of FreeRangeMap, the ordered free-range map under the simulated and
// vmm sub-allocators, including a randomized comparison with a byte map.
#include <cstdint>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "alloc/address_space.h"
#include "gtest/gtest.h"

namespace tensormem::internal {
namespace {

TEST(FreeRangeMapTest, FirstFitAlignsAndKeepsThePaddingFree) {
  FreeRangeMap ranges(/*start=*/1000,
                      /*size=*/9000);  // [1000, 10000)
  EXPECT_EQ(ranges.TakeFirstFit(100, 1), 1000u);
  EXPECT_EQ(ranges.TakeFirstFit(100, 1024), 2048u);  // [1100, 2048) stays free
  EXPECT_EQ(ranges.TakeFirstFit(900, 1), 1100u);     // fits the padding exactly
  EXPECT_EQ(ranges.free_bytes(), 9000u - 1100u);
  EXPECT_EQ(ranges.range_count(), 2u);  // [2000, 2048) and [2148, 10000)
  EXPECT_FALSE(ranges.TakeFirstFit(8000, 1).has_value());
  EXPECT_FALSE(ranges.TakeFirstFit(0, 1).has_value());
}

TEST(FreeRangeMapTest, ReleaseMergesBothNeighbours) {
  FreeRangeMap ranges(0, 4096);
  const uintptr_t a = *ranges.TakeFirstFit(1024, 1);
  const uintptr_t b = *ranges.TakeFirstFit(1024, 1);
  const uintptr_t c = *ranges.TakeFirstFit(1024, 1);
  ranges.Release(a, 1024);
  ranges.Release(c, 1024);
  EXPECT_EQ(ranges.range_count(), 2u);
  ranges.Release(b, 1024);
  EXPECT_EQ(ranges.range_count(), 1u);
  EXPECT_EQ(ranges.free_bytes(), 4096u);
  EXPECT_EQ(ranges.TakeFirstFit(4096, 1), 0u);
}

TEST(FreeRangeMapTest, TakeFromTopSkipsHolesBelow) {
  FreeRangeMap ranges(0, 8192);
  const uintptr_t a = *ranges.TakeFirstFit(1024, 1);
  ASSERT_TRUE(ranges.TakeFirstFit(1024, 1).has_value());
  ranges.Release(a, 1024);
  EXPECT_EQ(ranges.TakeFromTop(512, 1), 2048u);  // not the hole at 0
  EXPECT_EQ(ranges.TakeFromTop(8192 - 2560, 1), 2560u);
  EXPECT_FALSE(ranges.TakeFromTop(1, 1).has_value());  // the top is used up
  EXPECT_EQ(ranges.TakeFirstFit(1024, 1), 0u);
}

TEST(FreeRangeMapTest, TakeRangeNeedsOneFreeRangeAndChangesNothingElse) {
  FreeRangeMap ranges(0, 4096);
  ASSERT_TRUE(ranges.TakeRange(1024, 1024));  // [0, 1024) and [2048, 4096)
  EXPECT_EQ(ranges.range_count(), 2u);
  EXPECT_FALSE(ranges.TakeRange(512, 1024));  // crosses a taken range
  EXPECT_FALSE(ranges.TakeRange(1024, 256));  // taken
  EXPECT_FALSE(ranges.TakeRange(3840, 512));  // past the end
  EXPECT_FALSE(ranges.TakeRange(2048, 0));    // empty
  EXPECT_EQ(ranges.free_bytes(), 3072u);
  EXPECT_TRUE(ranges.TakeRange(2048, 2048));  // a whole range
  EXPECT_EQ(ranges.range_count(), 1u);
  EXPECT_TRUE(ranges.Overlaps(768, 512));
  EXPECT_FALSE(ranges.Overlaps(1024, 3072));
}

TEST(FreeRangeMapTest, TakeOverlapTakesOnlyWhatIsFree) {
  FreeRangeMap ranges(0, 8192);
  ASSERT_TRUE(ranges.TakeRange(2048, 1024));  // [0, 2048), [3072, 8192)
  ranges.TakeOverlap(1024, 4096);             // across the taken range
  EXPECT_EQ(ranges.free_bytes(), 1024u + 3072u);
  EXPECT_EQ(ranges.range_count(), 2u);  // [0, 1024) and [5120, 8192)
  EXPECT_FALSE(ranges.Overlaps(1024, 4096));
  EXPECT_TRUE(ranges.Overlaps(0, 1));
  EXPECT_TRUE(ranges.Overlaps(5120, 1));
  ranges.TakeOverlap(0, 8192);
  EXPECT_EQ(ranges.free_bytes(), 0u);
  EXPECT_EQ(ranges.range_count(), 0u);
}

// The obviously-correct model: one flag per byte of a small space.
class ByteMap {
 public:
  ByteMap(uintptr_t start, uint64_t size) : start_(start), used_(size, false) {}

  std::optional<uintptr_t> FirstFit(uint64_t size, uint64_t alignment) const {
    for (uint64_t offset = 0; offset + size <= used_.size(); ++offset) {
      if ((start_ + offset) % alignment != 0) continue;
      bool free = true;
      for (uint64_t i = offset; i < offset + size && free; ++i)
        free = !used_[i];
      if (free) return start_ + offset;
    }
    return std::nullopt;
  }
  void Mark(uintptr_t address, uint64_t size, bool used) {
    for (uint64_t i = 0; i < size; ++i) used_[address - start_ + i] = used;
  }

 private:
  const uintptr_t start_;
  std::vector<bool> used_;
};

TEST(FreeRangeMapTest, FirstFitMatchesAByteMapOnRandomSequences) {
  constexpr uintptr_t kStart =
      4096 + 48;  // not aligned to the larger alignments
  constexpr uint64_t kSize = 3000;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 random(seed);
    FreeRangeMap ranges(kStart, kSize);
    ByteMap model(kStart, kSize);
    std::vector<std::pair<uintptr_t, uint64_t>> live;
    uint64_t live_bytes = 0;
    for (int step = 0; step < 300; ++step) {
      if (!live.empty() && random() % 3 == 0) {
        const size_t victim = random() % live.size();
        ranges.Release(live[victim].first, live[victim].second);
        model.Mark(live[victim].first, live[victim].second, false);
        live_bytes -= live[victim].second;
        live[victim] = live.back();
        live.pop_back();
      } else {
        const uint64_t size = 1 + random() % 200;
        const uint64_t alignment = uint64_t{1} << (random() % 8);
        const std::optional<uintptr_t> expected =
            model.FirstFit(size, alignment);
        const std::optional<uintptr_t> taken =
            ranges.TakeFirstFit(size, alignment);
        ASSERT_EQ(taken, expected) << "seed " << seed << " step " << step;
        if (taken) {
          model.Mark(*taken, size, true);
          live.emplace_back(*taken, size);
          live_bytes += size;
        }
      }
      ASSERT_EQ(ranges.free_bytes(), kSize - live_bytes);
    }
    for (auto [address, size] : live) ranges.Release(address, size);
    EXPECT_EQ(ranges.range_count(), 1u) << "seed " << seed;
    EXPECT_EQ(ranges.TakeFirstFit(kSize, 1), kStart);
  }
}

}  // namespace
}  // namespace tensormem::internal
