// BFC allocator scenarios checked against TensorFlow's own numbers.
#include <algorithm>
#include <memory>
#include <vector>

#include "alloc/bfc_test_util.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/host_sub_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/alloc/vmm_sub_allocator.h"

namespace tensormem {
namespace {

using testing::InvariantsHold;
using testing::MakeSimulatedBfc;
using testing::QuietOptions;

TEST(BfcScenarioTest, ThousandTwentyThreeAllocations) {
  BfcAllocator allocator(std::make_unique<HostSubAllocator>(), 1 * kGiB,
                         QuietOptions(false));
  std::vector<char*> blocks;
  for (size_t size = 1; size <= 1023; ++size) {
    char* p = static_cast<char*>(allocator.AllocateRaw(1, size));
    ASSERT_NE(p, nullptr) << size;
    blocks.push_back(p);
  }
  AllocatorStats stats = *allocator.GetStats();
  EXPECT_EQ(stats.num_allocs, 1023);
  EXPECT_EQ(stats.bytes_in_use, 654336u);
  EXPECT_EQ(stats.peak_bytes_in_use, 654336u);
  EXPECT_EQ(stats.largest_alloc_size, 1024u);
  std::vector<std::pair<char*, size_t>> extents;
  for (size_t i = 0; i < blocks.size(); ++i)
    extents.push_back({blocks[i], i + 1});
  std::sort(extents.begin(), extents.end());
  for (size_t i = 1; i < extents.size(); ++i) {
    EXPECT_GE(extents[i].first, extents[i - 1].first + extents[i - 1].second);
  }
  ASSERT_TRUE(InvariantsHold(allocator));
  for (char* p : blocks) allocator.Deallocate(p);
  stats = *allocator.GetStats();
  EXPECT_EQ(stats.bytes_in_use, 0u);
  EXPECT_EQ(stats.peak_bytes_in_use, 654336u);
  ASSERT_TRUE(InvariantsHold(allocator));
}

TEST(BfcScenarioTest, Coalescing) {
  auto allocator = MakeSimulatedBfc(1 * kGiB, QuietOptions(false));
  void* first = allocator->AllocateRaw(1, 4096);
  ASSERT_NE(first, nullptr);
  allocator->Deallocate(first);
  for (int round = 0; round < 1024; ++round) {
    void* a = allocator->AllocateRaw(1, 4096);
    void* b = allocator->AllocateRaw(1, 8 * kMiB);
    void* c = allocator->AllocateRaw(1, 16384);
    void* d = allocator->AllocateRaw(1, 40 * kMiB);
    ASSERT_TRUE(a && b && c && d) << round;
    allocator->Deallocate(a);
    allocator->Deallocate(b);
    allocator->Deallocate(c);
    allocator->Deallocate(d);
  }
  const AllocatorStats stats = *allocator->GetStats();
  EXPECT_EQ(stats.num_allocs, 4097);
  EXPECT_EQ(stats.bytes_in_use, 0u);
  EXPECT_EQ(stats.peak_bytes_in_use, 50352128u);
  EXPECT_EQ(stats.largest_alloc_size, 41943040u);
  EXPECT_EQ(allocator->AllocateRaw(1, 4096), first);
  ASSERT_TRUE(InvariantsHold(*allocator));
}

TEST(BfcScenarioTest, RoundingAndLimit) {
  auto allocator = MakeSimulatedBfc(2 * kMiB, QuietOptions(true));
  void* small = allocator->AllocateRaw(4, 4);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(allocator->RequestedSize(small), 4u);
  EXPECT_EQ(allocator->AllocatedSize(small), 256u);
  EXPECT_EQ(allocator->AllocationId(small), 1);
  EXPECT_EQ(allocator->AllocateRaw(1, 8 * kMiB), nullptr);
  EXPECT_EQ(allocator->AllocateRaw(1, 0), nullptr);
}

TEST(BfcScenarioTest, NoSplitBelowTwiceTheRequest) {
  // 600 KiB from a 1 MiB chunk leaves a tail smaller than the request, so the
  // whole chunk is handed out and nothing is left for a 256-byte request.
  auto allocator = MakeSimulatedBfc(1 * kMiB, QuietOptions(false));
  void* p = allocator->AllocateRaw(1, 600 * kKiB);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(allocator->AllocatedSize(p), 1 * kMiB);
  EXPECT_EQ(allocator->AllocateRaw(1, 256), nullptr);
}

TEST(BfcScenarioTest, BinSummary) {
  auto allocator = MakeSimulatedBfc(1 * kGiB, QuietOptions(false));
  for (int i = 0; i <= 4; ++i) {
    ASSERT_NE(allocator->AllocateRaw(1, 256 << i), nullptr);
    ASSERT_NE(allocator->AllocateRaw(1, 256 << i), nullptr);
  }
  const MemoryDump dump = allocator->RecordMemoryDump();
  ASSERT_EQ(dump.regions.size(), 1u);
  EXPECT_EQ(dump.regions[0].chunks.size(), 11u);
  ASSERT_EQ(dump.bins.size(), 21u);
  for (int i = 0; i <= 4; ++i) {
    EXPECT_EQ(dump.bins[i].total_chunks_in_bin, 2u) << i;
    EXPECT_EQ(dump.bins[i].total_chunks_in_use, 2u) << i;
    EXPECT_EQ(dump.bins[i].total_bytes_in_use, 2u * (256 << i)) << i;
  }
  for (int i = 5; i < 20; ++i)
    EXPECT_EQ(dump.bins[i].total_chunks_in_bin, 0u) << i;
  EXPECT_EQ(dump.bins[20].total_chunks_in_bin, 1u);
  EXPECT_EQ(dump.bins[20].total_chunks_in_use, 0u);
  EXPECT_EQ(dump.bins[20].total_bytes_in_bin,
            1 * kGiB - 2 * (256 + 512 + 1024 + 2048 + 4096));
}

// 128 x 4 MiB with growth under a 512 MiB limit, then free all but the last.
std::vector<uint64_t> GrowAndFreeAllButLast(BfcAllocator& allocator) {
  std::vector<void*> blocks;
  for (int i = 0; i < 128; ++i) {
    void* p = allocator.AllocateRaw(1, 4 * kMiB);
    EXPECT_NE(p, nullptr) << i;
    blocks.push_back(p);
  }
  std::vector<uint64_t> region_sizes;
  for (const MemoryDump::Region& region :
       allocator.RecordMemoryDump().regions) {
    region_sizes.push_back(region.size);
  }
  for (int i = 0; i < 127; ++i) allocator.Deallocate(blocks[i]);
  return region_sizes;
}

TEST(BfcScenarioTest, GrowthFailsWithoutCoalescingEvenWithGc) {
  for (const bool simulated : {false, true}) {
    BfcAllocator::Options options = QuietOptions(true);
    options.garbage_collection = true;
    std::unique_ptr<SubAllocator> upstream;
    if (simulated) {
      upstream = std::make_unique<SimulatedSubAllocator>(1 * kGiB);
    } else {
      upstream = std::make_unique<HostSubAllocator>();
    }
    BfcAllocator allocator(std::move(upstream), 512 * kMiB, options);
    std::vector<uint64_t> sizes = GrowAndFreeAllButLast(allocator);
    std::sort(sizes.begin(), sizes.end());
    EXPECT_EQ(sizes, (std::vector<uint64_t>{4 * kMiB, 4 * kMiB, 8 * kMiB,
                                            16 * kMiB, 32 * kMiB, 64 * kMiB,
                                            128 * kMiB, 256 * kMiB}));
    EXPECT_EQ(allocator.AllocateRaw(1, 508 * kMiB), nullptr) << simulated;
    EXPECT_NE(allocator.LastFailureReport().find("fragmentation"),
              std::string::npos)
        << allocator.LastFailureReport();
    ASSERT_TRUE(InvariantsHold(allocator));
  }
}

TEST(BfcScenarioTest, GrowthSucceedsOnVmm) {
  BfcAllocator allocator(std::make_unique<VmmSubAllocator>(1 * kGiB),
                         512 * kMiB, QuietOptions(true));
  const std::vector<uint64_t> sizes = GrowAndFreeAllButLast(allocator);
  EXPECT_EQ(sizes,
            std::vector<uint64_t>{512 * kMiB});  // every extension merged
  void* big = allocator.AllocateRaw(1, 508 * kMiB);
  EXPECT_NE(big, nullptr) << allocator.LastFailureReport();
  ASSERT_TRUE(InvariantsHold(allocator));
}

TEST(BfcScenarioTest, GarbageCollectionLeavesOneRegion) {
  BfcAllocator::Options options = QuietOptions(true);
  options.garbage_collection = true;
  auto allocator = MakeSimulatedBfc(2 * kGiB, options);
  std::vector<void*> blocks;
  for (int i = 0; i < 128; ++i)
    blocks.push_back(allocator->AllocateRaw(1, 4 * kMiB));
  for (int i = 0; i < 127; ++i) allocator->Deallocate(blocks[i]);
  EXPECT_EQ(allocator->RecordMemoryDump().regions.size(), 8u);
  EXPECT_TRUE(allocator->ReleaseFreeRegions());
  const MemoryDump dump = allocator->RecordMemoryDump();
  ASSERT_EQ(dump.regions.size(), 1u);
  EXPECT_EQ(dump.regions[0].size, 256 * kMiB);
  int free_chunks = 0;
  for (const MemoryDump::Chunk& chunk : dump.regions[0].chunks)
    free_chunks += !chunk.in_use;
  EXPECT_EQ(free_chunks, 1);
  EXPECT_EQ(dump.stats.pool_bytes, 256 * kMiB);
  EXPECT_FALSE(allocator->ReleaseFreeRegions());
  ASSERT_TRUE(InvariantsHold(*allocator));
}

TEST(BfcScenarioTest, GarbageCollectionOnFailureMakesRoom) {
  // Without GC the 1.6 GiB request cannot fit next to 512 MiB of empty
  // regions; with it, the empty ones go back and a larger region comes.
  for (const bool gc : {false, true}) {
    BfcAllocator::Options options = QuietOptions(true);
    options.garbage_collection = gc;
    auto allocator = MakeSimulatedBfc(2 * kGiB, options);
    std::vector<void*> blocks;
    for (int i = 0; i < 128; ++i)
      blocks.push_back(allocator->AllocateRaw(1, 4 * kMiB));
    for (int i = 0; i < 127; ++i) allocator->Deallocate(blocks[i]);
    void* big = allocator->AllocateRaw(1, 1600 * kMiB);
    EXPECT_EQ(big != nullptr, gc);
    ASSERT_TRUE(InvariantsHold(*allocator));
  }
}

TEST(BfcScenarioTest, ClearStatsKeepsInUse) {
  auto allocator = MakeSimulatedBfc(1 * kGiB, QuietOptions(false));
  void* a = allocator->AllocateRaw(1, 1 * kMiB);
  void* b = allocator->AllocateRaw(1, 4096);
  allocator->Deallocate(a);
  EXPECT_EQ(allocator->GetStats()->peak_bytes_in_use, 1 * kMiB + 4096);
  EXPECT_TRUE(allocator->ClearStats());
  const AllocatorStats stats = *allocator->GetStats();
  EXPECT_EQ(stats.num_allocs, 0);
  EXPECT_EQ(stats.bytes_in_use, 4096u);
  EXPECT_EQ(stats.peak_bytes_in_use, 4096u);
  EXPECT_EQ(stats.largest_alloc_size, 0u);
  EXPECT_EQ(stats.pool_bytes, 1 * kGiB);
  allocator->Deallocate(b);
}

}  // namespace
}  // namespace tensormem
