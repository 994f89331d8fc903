// The shards of a sharded allocator share one limit (budgeted_sub_allocator.h).
#include <memory>
#include <thread>

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

BuiltAllocator TwoShards(uint64_t limit, const char* policy = "tight") {
  AllocatorSpec spec;
  spec.policy = policy;
  spec.capacity = 4 * kGiB;
  spec.memory_limit = limit;
  spec.shards = 2;
  BfcAllocatorOptions options;
  options.allow_retry_on_failure = false;
  options.log_failures = false;
  absl::StatusOr<BuiltAllocator> built = CreateAllocator(spec, options);
  EXPECT_TRUE(built.ok()) << built.status();
  return *std::move(built);
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

}  // namespace
}  // namespace tensormem
