// Regressions found by the fuzzers and sweeps (fuzz/, docs/reliability.md),
// each named after what it found.
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>

#include "alloc/bfc_test_util.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/host_sub_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/alloc/system_allocator.h"

namespace tensormem {
namespace {

// fuzz/regressions/allocator/system_alignment_2_pow_63: the size plus the
// alignment padding overflowed inside the sanitizer's posix_memalign.
TEST(FuzzRegressionTest, SystemAllocatorRefusesAlignment2Pow63) {
  SystemAllocator system;
  EXPECT_EQ(system.Allocate(64, size_t{1} << 63), nullptr);
  EXPECT_EQ(system.Allocate(PTRDIFF_MAX - 100, 4096), nullptr);
  void* fine = system.Allocate(64, size_t{1} << 12);
  EXPECT_NE(fine, nullptr);
  system.Deallocate(fine);
}

// fuzz/regressions/allocator/host_alignment_2_pow_63: the same, in the host
// sub-allocator under a BFC allocator that passed the request's alignment on.
TEST(FuzzRegressionTest, HostSubAllocatorRefusesAlignment2Pow63) {
  HostSubAllocator host;
  size_t received = 1;
  EXPECT_EQ(host.Alloc(size_t{1} << 63, 4096, &received), nullptr);
  EXPECT_EQ(received, 0u);
  void* fine = host.Alloc(4096, 4096, &received);
  ASSERT_NE(fine, nullptr);
  host.Free(fine, received);
}

// The misuse sweep's hostile options: a fraction of 1e300 (a cast out of
// range) or 1e-300 (0 bytes) made every split leave an empty chunk behind.
TEST(FuzzRegressionTest,
     ExtremeFragmentationFractionsNeverSplitOffEmptyChunks) {
  for (double fraction :
       {1e300, 1e-300, std::numeric_limits<double>::quiet_NaN(),
        std::numeric_limits<double>::infinity()}) {
    BfcAllocator::Options options =
        testing::QuietOptions(/*allow_growth=*/true);
    options.fragmentation_fraction = fraction;
    BfcAllocator allocator(std::make_unique<SimulatedSubAllocator>(64 * kMiB),
                           256, options);
    void* block = allocator.AllocateRaw(256, 1);
    ASSERT_NE(block, nullptr) << fraction;
    EXPECT_TRUE(testing::InvariantsHold(allocator)) << fraction;
    allocator.Deallocate(block);
    EXPECT_TRUE(testing::InvariantsHold(allocator)) << fraction;
  }
}

}  // namespace
}  // namespace tensormem
