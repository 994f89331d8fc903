// Randomized BFC tests: invariants after every step, the fast free index
// against the TensorFlow-style reference step for step, and threads.
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "alloc/bfc_test_util.h"
#include "alloc/reference_free_index.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"

namespace tensormem {
namespace {

using testing::InvariantsHold;
using testing::MakeSimulatedBfc;
using testing::QuietOptions;

struct Config {
  bool growth;
  bool gc;
};

std::string ConfigName(const ::testing::TestParamInfo<Config>& info) {
  return std::string(info.param.growth ? "Growth" : "NoGrowth") +
         (info.param.gc ? "Gc" : "NoGc");
}

// Log-uniform sizes from 1 byte to `max_bytes`: mostly small, some huge.
size_t RandomSize(std::mt19937_64& rng, size_t max_bytes) {
  std::uniform_real_distribution<double> exponent(
      0, std::log2(static_cast<double>(max_bytes)));
  return std::max<size_t>(1, static_cast<size_t>(std::exp2(exponent(rng))));
}

class BfcRandomizedTest : public ::testing::TestWithParam<Config> {};

TEST_P(BfcRandomizedTest, InvariantsHoldAfterEveryStep) {
  BfcAllocator::Options options = QuietOptions(GetParam().growth);
  options.garbage_collection = GetParam().gc;
  auto allocator = MakeSimulatedBfc(64 * kMiB, options);
  std::mt19937_64 rng(42);
  std::vector<void*> live;
  for (int step = 0; step < 3000; ++step) {
    if (live.empty() || rng() % 100 < 55) {
      const size_t alignment = rng() % 8 == 0 ? size_t{1} << (rng() % 13) : 1;
      if (void* p =
              allocator->AllocateRaw(alignment, RandomSize(rng, 8 * kMiB)))
        live.push_back(p);
    } else {
      const size_t victim = rng() % live.size();
      allocator->Deallocate(live[victim]);
      live[victim] = live.back();
      live.pop_back();
    }
    ASSERT_TRUE(InvariantsHold(*allocator)) << "step " << step;
  }
  for (void* p : live) allocator->Deallocate(p);
  EXPECT_EQ(allocator->GetStats()->bytes_in_use, 0u);
  ASSERT_TRUE(InvariantsHold(*allocator));
}

TEST_P(BfcRandomizedTest, TimestampedInvariantsHoldAfterEveryStep) {
  BfcAllocator::Options options = QuietOptions(GetParam().growth);
  options.garbage_collection = GetParam().gc;
  auto allocator = MakeSimulatedBfc(64 * kMiB, options);
  SharedCounter counter;
  allocator->SetTimingCounter(&counter);
  std::mt19937_64 rng(5);
  uint64_t frontier = 0;
  uint64_t freed_before = 0;
  const std::function<uint64_t()> freed_by = [&] { return freed_before; };
  AllocationAttributes ordered;
  ordered.freed_by_func = &freed_by;
  std::vector<void*> live;
  for (int step = 0; step < 3000; ++step) {
    const int action = rng() % 100;
    if (live.empty() || action < 50) {
      freed_before = rng() % 2 ? counter.get() - std::min<uint64_t>(
                                                     counter.get(), rng() % 20)
                               : 0;
      const AllocationAttributes plain;
      void* p = allocator->AllocateRaw(1, RandomSize(rng, 8 * kMiB),
                                       rng() % 2 ? ordered : plain);
      if (p != nullptr) live.push_back(p);
    } else if (action < 95) {
      const size_t victim = rng() % live.size();
      allocator->Deallocate(live[victim]);
      live[victim] = live.back();
      live.pop_back();
    } else {
      frontier = counter.get() - std::min<uint64_t>(counter.get(), rng() % 10);
      allocator->SetSafeFrontier(frontier);
    }
    ASSERT_TRUE(InvariantsHold(*allocator))
        << "step " << step << "\n"
        << allocator->RecordMemoryDump().ToText();
  }
  for (void* p : live) allocator->Deallocate(p);
  allocator->SetSafeFrontier(counter.get() + 1);
  void* whole = allocator->AllocateRaw(1, 256);
  ASSERT_NE(whole, nullptr);
  allocator->Deallocate(whole);
  allocator->SetSafeFrontier(counter.get() + 1);
  allocator->Deallocate(allocator->AllocateRaw(1, 256));
  ASSERT_TRUE(InvariantsHold(*allocator));
  // Once everything is safe, each region is one free chunk again.
  for (const MemoryDump::Region& region :
       allocator->RecordMemoryDump().regions) {
    EXPECT_LE(region.chunks.size(), 2u);
  }
}

TEST_P(BfcRandomizedTest, FastIndexMatchesReferenceStepForStep) {
  BfcAllocator::Options options = QuietOptions(GetParam().growth);
  options.garbage_collection = GetParam().gc;
  const uint64_t limit = 4 * kGiB;
  auto make = [&](std::unique_ptr<BfcFreeIndex> index) {
    return std::make_unique<BfcAllocator>(
        std::make_unique<SimulatedSubAllocator>(2 * limit), limit, options,
        std::move(index));
  };
  auto fast = make(MakeFastFreeIndex());
  auto reference = make(std::make_unique<ReferenceFreeIndex>());
  const uint64_t fast_base =
      reinterpret_cast<uint64_t>(fast->upstream().BaseAddress());
  const uint64_t reference_base =
      reinterpret_cast<uint64_t>(reference->upstream().BaseAddress());
  std::mt19937_64 rng(GetParam().growth * 2 + GetParam().gc);
  std::vector<std::pair<void*, void*>> live;
  int successes = 0, failures = 0;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 100 < 52) {
      const size_t bytes = RandomSize(rng, 512 * kMiB);
      const size_t alignment = rng() % 16 == 0 ? size_t{1} << (rng() % 13) : 1;
      void* a = fast->AllocateRaw(alignment, bytes);
      void* b = reference->AllocateRaw(alignment, bytes);
      ASSERT_EQ(a == nullptr, b == nullptr)
          << "step " << step << " bytes " << bytes;
      if (a == nullptr) {
        ++failures;
        continue;
      }
      ++successes;
      ASSERT_EQ(reinterpret_cast<uint64_t>(a) - fast_base,
                reinterpret_cast<uint64_t>(b) - reference_base)
          << "step " << step << " bytes " << bytes;
      live.push_back({a, b});
    } else {
      const size_t victim = rng() % live.size();
      fast->Deallocate(live[victim].first);
      reference->Deallocate(live[victim].second);
      live[victim] = live.back();
      live.pop_back();
    }
    if (step % 500 == 0) {
      ASSERT_TRUE(InvariantsHold(*fast));
      ASSERT_TRUE(InvariantsHold(*reference));
    }
  }
  // Both outcomes must have been exercised for the comparison to mean much.
  EXPECT_GT(successes, 5000);
  EXPECT_GT(failures, 10);
  const AllocatorStats fast_stats = *fast->GetStats();
  const AllocatorStats reference_stats = *reference->GetStats();
  EXPECT_EQ(fast_stats.bytes_in_use, reference_stats.bytes_in_use);
  EXPECT_EQ(fast_stats.peak_pool_bytes, reference_stats.peak_pool_bytes);
  EXPECT_EQ(fast_stats.largest_free_block_bytes,
            reference_stats.largest_free_block_bytes);
}

TEST(BfcDifferentialTest, TimestampFiltersMatchTheReference) {
  // Timestamped frees, callers ordered before some of them, and moving
  // frontiers exercise the filtered search; both indexes must agree.
  BfcAllocator::Options options = QuietOptions(true);
  options.garbage_collection = true;
  const uint64_t limit = 256 * kMiB;
  auto make = [&](std::unique_ptr<BfcFreeIndex> index) {
    return std::make_unique<BfcAllocator>(
        std::make_unique<SimulatedSubAllocator>(2 * limit), limit, options,
        std::move(index));
  };
  auto fast = make(MakeFastFreeIndex());
  auto reference = make(std::make_unique<ReferenceFreeIndex>());
  SharedCounter fast_counter, reference_counter;
  fast->SetTimingCounter(&fast_counter);
  reference->SetTimingCounter(&reference_counter);
  const uint64_t fast_base =
      reinterpret_cast<uint64_t>(fast->upstream().BaseAddress());
  const uint64_t reference_base =
      reinterpret_cast<uint64_t>(reference->upstream().BaseAddress());
  std::mt19937_64 rng(9);
  uint64_t freed_before = 0;
  const std::function<uint64_t()> freed_by = [&] { return freed_before; };
  AllocationAttributes ordered;
  ordered.freed_by_func = &freed_by;
  std::vector<std::pair<void*, void*>> live;
  int filtered_allocations = 0;
  for (int step = 0; step < 10000; ++step) {
    const int action = rng() % 100;
    if (live.empty() || action < 50) {
      const size_t bytes = RandomSize(rng, 16 * kMiB);
      const size_t alignment = rng() % 8 == 0 ? size_t{1} << (rng() % 13) : 1;
      const bool use_order = rng() % 2;
      freed_before = fast_counter.get() -
                     std::min<uint64_t>(fast_counter.get(), rng() % 50);
      filtered_allocations += use_order && freed_before > 0;
      const AllocationAttributes plain;
      const AllocationAttributes& attributes = use_order ? ordered : plain;
      void* a = fast->AllocateRaw(alignment, bytes, attributes);
      void* b = reference->AllocateRaw(alignment, bytes, attributes);
      ASSERT_EQ(a == nullptr, b == nullptr) << "step " << step;
      if (a == nullptr) continue;
      ASSERT_EQ(reinterpret_cast<uint64_t>(a) - fast_base,
                reinterpret_cast<uint64_t>(b) - reference_base)
          << "step " << step;
      live.push_back({a, b});
    } else if (action < 95) {
      const size_t victim = rng() % live.size();
      fast->Deallocate(live[victim].first);
      reference->Deallocate(live[victim].second);
      live[victim] = live.back();
      live.pop_back();
    } else {
      const uint64_t frontier =
          fast_counter.get() -
          std::min<uint64_t>(fast_counter.get(), rng() % 20);
      fast->SetSafeFrontier(frontier);
      reference->SetSafeFrontier(frontier);
    }
  }
  EXPECT_GT(filtered_allocations, 1000);
  ASSERT_TRUE(InvariantsHold(*fast));
  ASSERT_TRUE(InvariantsHold(*reference));
}

INSTANTIATE_TEST_SUITE_P(AllConfigs, BfcRandomizedTest,
                         ::testing::Values(Config{false, false},
                                           Config{false, true},
                                           Config{true, false},
                                           Config{true, true}),
                         ConfigName);

TEST(BfcThreadTest, FourThreadsHundredThousandOpsEach) {
  BfcAllocator::Options options = QuietOptions(true);
  auto allocator = MakeSimulatedBfc(1 * kGiB, options);
  std::vector<std::thread> threads;
  std::atomic<int64_t> allocations{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::vector<void*> live;
      for (int op = 0; op < 100000; ++op) {
        if (live.empty() || (live.size() < 200 && rng() % 2 == 0)) {
          void* p = allocator->AllocateRaw(1, 1 + rng() % 65536);
          if (p != nullptr) {
            live.push_back(p);
            ++allocations;
          }
        } else {
          const size_t victim = rng() % live.size();
          EXPECT_TRUE(allocator->CheckedDeallocate(live[victim]).ok());
          live[victim] = live.back();
          live.pop_back();
        }
      }
      for (void* p : live) allocator->Deallocate(p);
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(InvariantsHold(*allocator));
  const AllocatorStats stats = *allocator->GetStats();
  EXPECT_EQ(stats.bytes_in_use, 0u);
  EXPECT_EQ(stats.num_allocs, allocations.load());
  EXPECT_GT(stats.num_allocs, 100000);
}

}  // namespace
}  // namespace tensormem
