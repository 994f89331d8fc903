// The shards of a sharded allocator share one limit (budgeted_sub_allocator.h).
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/alloc/budgeted_sub_allocator.h"
#include "tensormem/alloc/sharded_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

TEST(MemoryBudgetTest, ChargesWhatFitsAndCreditsWhatReturns) {
  MemoryBudget budget(10 * kMiB);
  EXPECT_TRUE(budget.TryCharge(6 * kMiB));
  EXPECT_FALSE(budget.TryCharge(5 * kMiB));
  EXPECT_EQ(budget.used(), 6 * kMiB);
  EXPECT_TRUE(budget.TryCharge(4 * kMiB));
  budget.Credit(10 * kMiB);
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_FALSE(budget.TryCharge(UINT64_MAX));  // no overflow past the limit
}

// A region freed with decommitted ranges inside credits only what was still
// committed: those ranges were credited when decommitted.
TEST(BudgetedSubAllocatorTest, AFreedRegionCreditsOnlyItsCommittedBytes) {
  auto budget = std::make_shared<MemoryBudget>(16 * kMiB);
  BudgetedSubAllocator upstream(std::make_unique<SimulatedSubAllocator>(kGiB),
                                budget);
  size_t received = 0;
  char* region = static_cast<char*>(upstream.Alloc(8 * kMiB, 256, &received));
  ASSERT_NE(region, nullptr);
  ASSERT_TRUE(upstream.Decommit(region + kMiB, 2 * kMiB));
  ASSERT_TRUE(upstream.Decommit(region + 4 * kMiB, 2 * kMiB));
  ASSERT_TRUE(upstream.Recommit(region + kMiB, kMiB));  // half of the first
  EXPECT_EQ(budget->used(), 5 * kMiB);
  upstream.Free(region, 8 * kMiB);
  EXPECT_EQ(budget->used(), 0u);
  // Nothing drifted: the whole budget serves again.
  void* again = upstream.Alloc(16 * kMiB, 256, &received);
  EXPECT_NE(again, nullptr);
  upstream.Free(again, received);
}

TEST(BudgetedSubAllocatorTest, TwoUpstreamsHoldTheLimitBetweenThem) {
  auto budget = std::make_shared<MemoryBudget>(8 * kMiB);
  BudgetedSubAllocator a(std::make_unique<SimulatedSubAllocator>(kGiB), budget);
  BudgetedSubAllocator b(std::make_unique<SimulatedSubAllocator>(kGiB), budget);
  size_t received = 0;
  void* first = a.Alloc(6 * kMiB, 256, &received);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(received, 6 * kMiB);
  EXPECT_EQ(b.Alloc(4 * kMiB, 256, &received), nullptr);
  EXPECT_EQ(received, 0u);
  EXPECT_EQ(budget->used(), 6 * kMiB);  // the refusal charged nothing
  void* second = b.Alloc(2 * kMiB, 256, &received);
  ASSERT_NE(second, nullptr);
  a.Free(first, 6 * kMiB);
  EXPECT_EQ(budget->used(), 2 * kMiB);
  void* third = b.Alloc(4 * kMiB, 256, &received);
  EXPECT_NE(third, nullptr);
  EXPECT_EQ(budget->used(), 6 * kMiB);
  b.Free(third, 4 * kMiB);
  b.Free(second, 2 * kMiB);
  EXPECT_EQ(budget->used(), 0u);
  EXPECT_EQ(a.Name(), "simulated");
  EXPECT_NE(a.BaseAddress(), b.BaseAddress());
}

// `spec` over 4 GiB of address space with `limit`, no retries, no logging.
BuiltAllocator Build(AllocatorSpec spec, uint64_t limit) {
  spec.capacity = 4 * kGiB;
  spec.memory_limit = limit;
  BfcAllocatorOptions options;
  options.allow_retry_on_failure = false;
  options.log_failures = false;
  absl::StatusOr<BuiltAllocator> built = CreateAllocator(spec, options);
  EXPECT_TRUE(built.ok()) << built.status();
  return *std::move(built);
}

BuiltAllocator TwoShards(uint64_t limit, const char* policy = "tight") {
  AllocatorSpec spec;
  spec.policy = policy;
  spec.shards = 2;
  return Build(spec, limit);
}

// Runs `work` on a new thread (which takes the other shard while this one
// holds the first: shards go to threads alive at once).
template <typename Work>
void OnAnotherThread(Work work) {
  std::thread thread(work);
  thread.join();
}

// One thread may use more than its shard's share of the limit, and the
// shards together never hold more than the limit.
TEST(SharedLimitTest, AShardTakesWhatItsThreadsNeed) {
  constexpr uint64_t kLimit = 64 * kMiB;
  BuiltAllocator built = TwoShards(kLimit);
  Allocator& allocator = *built.allocator;
  void* big = allocator.Allocate(48 * kMiB);  // over half of the limit
  ASSERT_NE(big, nullptr);
  OnAnotherThread([&] {
    // The other shard cannot grow past what the first holds...
    EXPECT_EQ(allocator.Allocate(32 * kMiB), nullptr);
    // ...but what fits the rest of the limit is served.
    void* small = allocator.Allocate(8 * kMiB);
    EXPECT_NE(small, nullptr);
    allocator.Deallocate(small);
  });
  EXPECT_LE(allocator.GetStats()->pool_bytes, kLimit);
  EXPECT_EQ(allocator.GetStats()->bytes_limit, kLimit);
  allocator.Deallocate(big);
}

// Memory one shard holds free goes back when another shard needs it. (Under
// tf, whose regions never grow in place: a free region too small for the
// request serves nothing where it is.)
TEST(SharedLimitTest, AnotherShardsFreeRegionsServeARequest) {
  constexpr uint64_t kLimit = 64 * kMiB;
  BuiltAllocator built = TwoShards(kLimit, "tf");
  Allocator& allocator = *built.allocator;
  // Two regions of 32 MiB (growth doubles), both freed: the first shard
  // holds the whole limit, in pieces too small for what comes next.
  void* first = allocator.Allocate(20 * kMiB);
  void* second = allocator.Allocate(30 * kMiB);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  allocator.Deallocate(first);
  allocator.Deallocate(second);
  OnAnotherThread([&] {
    void* other = allocator.Allocate(40 * kMiB);
    EXPECT_NE(other, nullptr);
    // The first shard gave its regions back: the pools still fit the limit.
    EXPECT_LE(allocator.GetStats()->pool_bytes, kLimit);
    if (other != nullptr) allocator.Deallocate(other);
  });
  EXPECT_EQ(allocator.GetStats()->bytes_in_use, 0u);
}

BuiltAllocator TightWithThreadPools(uint64_t limit) {
  AllocatorSpec spec;
  EXPECT_EQ(spec.policy, "tight");
  EXPECT_GT(spec.thread_pools, 1);  // the default
  return Build(spec, limit);
}

// The first thread keeps the allocator's own pool; another thread gets a
// pool of its own, whose blocks any thread may free; statistics cover both.
TEST(ThreadPoolsTest, ASecondThreadGetsAPoolOfItsOwn) {
  BuiltAllocator built = TightWithThreadPools(1 * kGiB);
  BfcAllocator& bfc = *built.bfc;
  void* first = bfc.Allocate(1 * kMiB);
  ASSERT_NE(first, nullptr);
  void* other = nullptr;
  OnAnotherThread([&] { other = bfc.Allocate(3 * kMiB); });
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(bfc.num_thread_pools(), 1);
  EXPECT_EQ(bfc.AllocatedSize(other), 3 * kMiB);
  EXPECT_EQ(bfc.RequestedSize(first), 1 * kMiB);
  const AllocatorStats both = *bfc.GetStats();
  EXPECT_EQ(both.bytes_in_use, 4 * kMiB);
  EXPECT_EQ(both.num_allocs, 2);
  EXPECT_TRUE(bfc.CheckInvariants().ok());
  // Freed here, by the first thread: it goes to the other thread's pool.
  EXPECT_TRUE(bfc.CheckedDeallocate(other).ok());
  EXPECT_FALSE(bfc.CheckedDeallocate(other).ok());  // twice: refused
  EXPECT_EQ(bfc.GetStats()->bytes_in_use, 1 * kMiB);
  bfc.Deallocate(first);
  EXPECT_TRUE(bfc.CheckInvariants().ok());
}

// The pools share the limit: what one thread holds, another cannot have
// until it is freed and its regions given back.
TEST(ThreadPoolsTest, PoolsShareTheLimit) {
  constexpr uint64_t kLimit = 64 * kMiB;
  BuiltAllocator built = TightWithThreadPools(kLimit);
  Allocator& allocator = *built.allocator;
  void* big = allocator.Allocate(48 * kMiB);
  ASSERT_NE(big, nullptr);
  OnAnotherThread([&] {
    EXPECT_EQ(allocator.Allocate(32 * kMiB), nullptr);
    EXPECT_LE(allocator.GetStats()->pool_bytes, kLimit);
  });
  allocator.Deallocate(big);
  OnAnotherThread([&] {
    void* now = allocator.Allocate(56 * kMiB);
    EXPECT_NE(now, nullptr);
    EXPECT_LE(allocator.GetStats()->pool_bytes, kLimit);
    allocator.Deallocate(now);
  });
}

// Four threads allocating and freeing each other's blocks: nothing handed
// out twice, every pool's invariants hold.
TEST(ThreadPoolsTest, ThreadsFreeEachOthersBlocks) {
  BuiltAllocator built = TightWithThreadPools(1 * kGiB);
  BfcAllocator& bfc = *built.bfc;
  constexpr int kThreads = 4;
  constexpr int kRounds = 2000;
  std::vector<std::vector<void*>> handed(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        void* p = bfc.Allocate(256 * (1 + (i * 7 + t) % 64));
        ASSERT_NE(p, nullptr);
        handed[t].push_back(p);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::set<void*> distinct;
  for (const auto& list : handed) distinct.insert(list.begin(), list.end());
  EXPECT_EQ(distinct.size(), size_t{kThreads} * kRounds);
  EXPECT_GE(bfc.num_thread_pools(), 1);
  threads.clear();
  for (int t = 0; t < kThreads; ++t) {
    // Each thread frees the next one's blocks.
    threads.emplace_back([&, t] {
      for (void* p : handed[(t + 1) % kThreads])
        EXPECT_TRUE(bfc.CheckedDeallocate(p).ok());
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(bfc.GetStats()->bytes_in_use, 0u);
  EXPECT_TRUE(bfc.CheckInvariants().ok());
}

}  // namespace
}  // namespace tensormem
