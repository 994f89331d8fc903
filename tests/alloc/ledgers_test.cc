// Tests of the books the adaptors and the address-space sub-allocators share:
// BlockLedger (live blocks and statistics) and ReservedRegions (reservation,
// placement, prepare-or-give-back, misuse).
#include <cstdint>
#include <optional>
#include <string>

#include "alloc/reserved_regions.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/block_ledger.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

TEST(BlockLedgerTest, CountsBlocksAndTheirPeaks) {
  BlockLedger ledger;
  int a = 0, b = 0;
  ledger.Add(&a, {.requested = 100, .charged = 112});
  ledger.Add(&b, {.requested = 5000, .charged = 8192});
  EXPECT_EQ(ledger.stats().num_allocs, 2);
  EXPECT_EQ(ledger.stats().bytes_in_use, 8304u);
  EXPECT_EQ(ledger.stats().largest_alloc_size, 8192u);
  EXPECT_EQ(ledger.RequestedSize(&a), 100u);
  EXPECT_EQ(ledger.ChargedSize(&b), 8192u);

  std::optional<BlockLedger::Block> taken = ledger.Take(&b);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->requested, 5000u);
  EXPECT_EQ(ledger.stats().bytes_in_use, 112u);
  EXPECT_EQ(ledger.stats().pool_bytes, 112u);
  EXPECT_EQ(ledger.stats().peak_bytes_in_use, 8304u);
  EXPECT_EQ(ledger.RequestedSize(&b), std::nullopt);

  ledger.ClearStats();
  EXPECT_EQ(ledger.stats().num_allocs, 0);
  EXPECT_EQ(ledger.stats().peak_bytes_in_use, 112u);
  EXPECT_EQ(ledger.stats().largest_alloc_size, 0u);
  EXPECT_EQ(ledger.num_live(), 1u);
}

TEST(BlockLedgerTest, MisuseNamesTheOwnerAndChangesNothing) {
  BlockLedger ledger;
  int a = 0;
  ledger.Add(&a, {.requested = 8, .charged = 16});
  ASSERT_TRUE(ledger.Take(&a).has_value());
  EXPECT_EQ(ledger.Take(&a), std::nullopt);
  EXPECT_THAT(std::string(BlockLedger::NotLiveError(&a, "mine").message()),
              HasSubstr("not a live block of mine"));
  EXPECT_EQ(ledger.stats().bytes_in_use, 0u);
  EXPECT_EQ(ledger.stats().num_allocs, 1);
}

TEST(BlockLedgerTest, RestoreUndoesATake) {
  BlockLedger ledger;
  int a = 0;
  ledger.Add(&a, {.requested = 8, .charged = 16});
  std::optional<BlockLedger::Block> taken = ledger.Take(&a);
  ASSERT_TRUE(taken.has_value());
  ledger.Restore(&a, *taken);
  EXPECT_EQ(ledger.ChargedSize(&a), 16u);
  EXPECT_EQ(ledger.stats().bytes_in_use, 16u);
  EXPECT_EQ(ledger.stats().num_allocs, 1);  // not a new allocation
}

using internal::ReservedRegions;
constexpr auto kFirstFit = ReservedRegions::Placement::kFirstFit;
constexpr auto kTop = ReservedRegions::Placement::kTopThenFirstFit;

bool Accept(uintptr_t, uint64_t) { return true; }

TEST(ReservedRegionsTest, FirstFitReusesTheLowestHoleAndTopSkipsIt) {
  ReservedRegions regions(kGiB, 2 * kMiB, 4096);
  ASSERT_TRUE(regions.status().ok());
  const uintptr_t base = reinterpret_cast<uintptr_t>(regions.base());
  EXPECT_EQ(base % (2 * kMiB), 0u);
  EXPECT_EQ(regions.Take(8192, 4096, kFirstFit, Accept), base);
  EXPECT_EQ(regions.Take(8192, 4096, kFirstFit, Accept), base + 8192);
  regions.Free(reinterpret_cast<void*>(base), 8192, "test", [] {});
  // The hole at the base: first fit takes it, the top placement goes above.
  EXPECT_EQ(regions.Take(4096, 4096, kTop, Accept), base + 16384);
  EXPECT_EQ(regions.Take(4096, 4096, kFirstFit, Accept), base);
  EXPECT_EQ(regions.live_regions(), 3u);
  EXPECT_EQ(regions.live_bytes(), 16384u);
}

TEST(ReservedRegionsTest, ARefusedPrepareGivesTheRangeBack) {
  ReservedRegions regions(kGiB, 2 * kMiB, 4096);
  const uintptr_t base = reinterpret_cast<uintptr_t>(regions.base());
  uintptr_t prepared_at = 0;
  EXPECT_EQ(regions.Take(8192, 4096, kFirstFit,
                         [&](uintptr_t start, uint64_t) {
                           prepared_at = start;
                           return false;
                         }),
            std::nullopt);
  EXPECT_EQ(prepared_at, base);
  EXPECT_EQ(regions.live_regions(), 0u);
  EXPECT_EQ(regions.Take(8192, 4096, kFirstFit, Accept), base);
}

TEST(ReservedRegionsTest, MisuseIsCountedAndChangesNothing) {
  ReservedRegions regions(kGiB, 2 * kMiB, 4096);
  const std::optional<uintptr_t> start =
      regions.Take(8192, 4096, kFirstFit, Accept);
  ASSERT_TRUE(start.has_value());
  bool finished = false;
  // Wrong size, then an address that is no region start.
  regions.Free(reinterpret_cast<void*>(*start), 4096, "test",
               [&] { finished = true; });
  regions.Free(reinterpret_cast<void*>(*start + 4096), 4096, "test",
               [&] { finished = true; });
  EXPECT_FALSE(finished);
  EXPECT_EQ(regions.misuse_count(), 2);
  EXPECT_EQ(regions.live_bytes(), 8192u);
  regions.Free(reinterpret_cast<void*>(*start), 8192, "test",
               [&] { finished = true; });
  EXPECT_TRUE(finished);
  EXPECT_EQ(regions.live_regions(), 0u);
}

TEST(ReservedRegionsTest, AFailedReservationFailsEveryTake) {
  ReservedRegions regions(0, 2 * kMiB, 4096);
  EXPECT_FALSE(regions.status().ok());
  EXPECT_EQ(regions.base(), nullptr);
  EXPECT_EQ(regions.Take(4096, 4096, kFirstFit, Accept), std::nullopt);
}

}  // namespace
}  // namespace tensormem
