// Regressions found by the fuzzers and sweeps (fuzz/, docs/reliability.md),
// each named after what it found.
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

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
  EXPECT_EQ(host.Alloc(4096, size_t{1} << 63, &received), nullptr);
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

// Upstreams that align regions to 256 bytes only (cuMemAlloc and
// cuMemAllocAsync, sub-allocators `cuda` and `cuda-async`).
class AlignsTo256Only final : public SubAllocator {
 public:
  void* Alloc(size_t bytes, size_t alignment, size_t* received) override {
    if (alignment > 256) {
      *received = 0;
      return nullptr;
    }
    return wrapped_.Alloc(bytes, alignment, received);
  }
  void Free(void* ptr, size_t bytes) override { wrapped_.Free(ptr, bytes); }
  bool SupportsCoalescing() const override { return false; }
  MemoryKind GetMemoryKind() const override { return MemoryKind::kSimulated; }
  std::string Name() const override { return "aligns-to-256-only"; }

 private:
  SimulatedSubAllocator wrapped_{256 * kMiB, /*coalescing=*/false};
};

// The CUDA fault sweep (tests/cuda/cuda_fault_sweep_test.cc): a request
// aligned beyond 256 bytes that needed a new region failed as "out of
// memory" with the whole limit unreserved, as the upstream refused the
// alignment. The region is now larger by the padding and aligned inside.
TEST(FuzzRegressionTest, AlignedRequestOverAnUpstreamAligningTo256IsServed) {
  for (size_t alignment : {size_t{512}, size_t{2048}, size_t{1} << 20}) {
    BfcAllocator allocator(std::make_unique<AlignsTo256Only>(), 64 * kMiB,
                           testing::QuietOptions(/*allow_growth=*/true));
    void* block = allocator.AllocateRaw(alignment, 32512);
    ASSERT_NE(block, nullptr)
        << alignment << ": " << allocator.LastFailureReport();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % alignment, 0u);
    EXPECT_TRUE(testing::InvariantsHold(allocator)) << alignment;
    allocator.Deallocate(block);
    EXPECT_TRUE(testing::InvariantsHold(allocator)) << alignment;
  }
  // Past the limit the padding is not asked for.
  BfcAllocator small(std::make_unique<AlignsTo256Only>(), 1 * kMiB,
                     testing::QuietOptions(/*allow_growth=*/true));
  EXPECT_EQ(small.AllocateRaw(size_t{1} << 21, 256), nullptr);
  EXPECT_TRUE(testing::InvariantsHold(small));
}

}  // namespace
}  // namespace tensormem
