// The BFC policy functions and the fast free index against the reference.
#include "tensormem/alloc/bfc_policy.h"

#include <algorithm>
#include <random>
#include <vector>

#include "alloc/reference_free_index.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/bfc_free_index.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

TEST(BfcPolicyTest, Rounding) {
  EXPECT_EQ(bfc::RoundedBytes(1), 256u);
  EXPECT_EQ(bfc::RoundedBytes(256), 256u);
  EXPECT_EQ(bfc::RoundedBytes(257), 512u);
  EXPECT_EQ(bfc::RoundedBytes(SIZE_MAX - 10), std::nullopt);
}

TEST(BfcPolicyTest, BinsCoverTheirSizeClasses) {
  EXPECT_EQ(bfc::BinNumForSize(0), 0);
  EXPECT_EQ(bfc::BinNumForSize(255), 0);
  for (int b = 0; b < bfc::kNumBins; ++b) {
    const uint64_t size = bfc::BinSizeFloor(b);
    EXPECT_EQ(bfc::BinNumForSize(size), b);
    EXPECT_EQ(bfc::BinNumForSize(size + 255), b);
    EXPECT_EQ(bfc::BinNumForSize(2 * size - 1), b);
    if (b < bfc::kNumBins - 1) {
      EXPECT_NE(bfc::BinNumForSize(2 * size), b);
    }
  }
  EXPECT_EQ(bfc::BinNumForSize(1 * kTiB), bfc::kNumBins - 1);
}

TEST(BfcPolicyTest, SplitRule) {
  const uint64_t cap = bfc::kDefaultMaxInternalFragmentation;
  EXPECT_TRUE(bfc::ShouldSplit(512, 256, cap));
  EXPECT_FALSE(bfc::ShouldSplit(1 * kMiB, 600 * kKiB, cap));
  EXPECT_TRUE(bfc::ShouldSplit(400 * kMiB, 272 * kMiB, cap));   // tail 128 MiB
  EXPECT_FALSE(bfc::ShouldSplit(400 * kMiB, 273 * kMiB, cap));  // tail 127 MiB
}

TEST(BfcPolicyTest, BackpedalAlwaysShrinks) {
  for (uint64_t bytes :
       {uint64_t{256}, uint64_t{512}, uint64_t{2304}, uint64_t{2560},
        uint64_t{2 * kMiB}, uint64_t{3 * kGiB}}) {
    int steps = 0;
    for (uint64_t b = bytes; b > 0; b = bfc::BackpedalBytes(b)) {
      const uint64_t next = bfc::BackpedalBytes(b);
      ASSERT_LT(next, b);
      EXPECT_EQ(next % 256, 0u);
      ++steps;
    }
    EXPECT_LT(steps, 250) << bytes;
  }
  EXPECT_EQ(bfc::BackpedalBytes(10 * 256 * 100), 9 * 256 * 100);
}

TEST(BfcPolicyTest, AlignmentPadding) {
  EXPECT_EQ(bfc::AlignmentPadding(4096, 4096), 0u);
  EXPECT_EQ(bfc::AlignmentPadding(4096 + 256, 4096), 3840u);
  EXPECT_EQ(bfc::AlignmentPadding(512, 256), 0u);
}

TEST(BfcFreeIndexTest, FastMatchesReferenceOnRandomOperations) {
  std::unique_ptr<BfcFreeIndex> fast = MakeFastFreeIndex();
  ReferenceFreeIndex reference;
  std::mt19937_64 rng(3);
  std::vector<FreeChunkKey> present;
  uint64_t next_address = 0;
  for (int step = 0; step < 20000; ++step) {
    const int op = rng() % 10;
    if (op < 4 || present.empty()) {
      const FreeChunkKey key{256 * (1 + rng() % (1u << (rng() % 22))),
                             next_address += 1 << 20,
                             static_cast<uint32_t>(step)};
      fast->Insert(key);
      reference.Insert(key);
      present.push_back(key);
    } else if (op < 7) {
      const size_t victim = rng() % present.size();
      ASSERT_TRUE(fast->Erase(present[victim]));
      ASSERT_TRUE(reference.Erase(present[victim]));
      present[victim] = present.back();
      present.pop_back();
    } else {
      const uint64_t want = 256 * (1 + rng() % (1u << (rng() % 22)));
      const auto fit = fast->FindBestFit(want);
      const auto expected = reference.FindBestFit(want);
      ASSERT_EQ(fit.has_value(), expected.has_value());
      if (fit) {
        ASSERT_EQ(fit->handle, expected->handle);
      }
      const uint64_t odd = rng() % 7 + 2;
      const auto accept = [odd](const FreeChunkKey& key) {
        return key.handle % odd == 0;
      };
      const auto filtered = fast->FindBestFitIf(want, accept);
      const auto expected_filtered = reference.FindBestFitIf(want, accept);
      ASSERT_EQ(filtered.has_value(), expected_filtered.has_value());
      if (filtered) {
        ASSERT_EQ(filtered->handle, expected_filtered->handle);
      }
    }
    ASSERT_EQ(fast->Size(), reference.Size());
    const auto largest = fast->Largest();
    const auto expected_largest = reference.Largest();
    ASSERT_EQ(largest.has_value(), expected_largest.has_value());
    if (largest) {
      ASSERT_EQ(largest->handle, expected_largest->handle);
    }
  }
  EXPECT_FALSE(fast->Erase(FreeChunkKey{1, 1, 1}));
  EXPECT_FALSE(fast->Contains(FreeChunkKey{1, 1, 1}));
}

TEST(BfcFreeIndexTest, BinsGrowAndShrinkAcrossRepresentations) {
  // One bin filled well past its small array and emptied again, twice, with
  // the answers checked against the reference at every size.
  std::unique_ptr<BfcFreeIndex> fast = MakeFastFreeIndex();
  ReferenceFreeIndex reference;
  std::mt19937_64 rng(11);
  for (int cycle = 0; cycle < 2; ++cycle) {
    std::vector<FreeChunkKey> keys;
    for (uint32_t i = 0; i < 100; ++i) {
      keys.push_back({4096 + 256 * (rng() % 16),
                      0x100000 * (rng() % 50 + 1) + 256 * i, i});
      fast->Insert(keys.back());
      reference.Insert(keys.back());
      const uint64_t want = 4096 + 256 * (rng() % 17);
      ASSERT_EQ(fast->FindBestFit(want).has_value(),
                reference.FindBestFit(want).has_value());
      if (fast->FindBestFit(want)) {
        ASSERT_EQ(fast->FindBestFit(want)->handle,
                  reference.FindBestFit(want)->handle);
      }
    }
    std::shuffle(keys.begin(), keys.end(), rng);
    for (const FreeChunkKey& key : keys) {
      ASSERT_TRUE(fast->Contains(key));
      ASSERT_TRUE(fast->Erase(key));
      ASSERT_TRUE(reference.Erase(key));
      ASSERT_FALSE(fast->Contains(key));
      const uint64_t want = 4096 + 256 * (rng() % 17);
      const auto fit = fast->FindBestFit(want);
      const auto expected = reference.FindBestFit(want);
      ASSERT_EQ(fit.has_value(), expected.has_value());
      if (fit) {
        ASSERT_EQ(fit->handle, expected->handle);
      }
      ASSERT_EQ(fast->Largest().has_value(), reference.Largest().has_value());
      if (fast->Largest()) {
        ASSERT_EQ(fast->Largest()->handle, reference.Largest()->handle);
      }
    }
    EXPECT_EQ(fast->Size(), 0u);
  }
}

TEST(BfcFreeIndexTest, TiesGoToTheLowestAddress) {
  std::unique_ptr<BfcFreeIndex> fast = MakeFastFreeIndex();
  fast->Insert({4096, 0x3000, 3});
  fast->Insert({4096, 0x1000, 1});
  fast->Insert({8192, 0x0, 0});
  EXPECT_EQ(fast->FindBestFit(300)->handle, 1u);
  EXPECT_EQ(fast->FindBestFit(4097)->handle, 0u);
  EXPECT_EQ(fast->FindBestFit(8193), std::nullopt);
  EXPECT_EQ(fast->Largest()->handle, 0u);
}

}  // namespace
}  // namespace tensormem
