#include "tensormem/alloc/sharded_allocator.h"

#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/alloc/host_sub_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

BfcAllocatorOptions Quiet() {
  BfcAllocatorOptions options;
  options.allow_retry_on_failure = false;
  options.log_failures = false;
  return options;
}

std::unique_ptr<ShardedAllocator> MakeSharded(int shards, uint64_t limit) {
  std::vector<std::unique_ptr<BfcAllocator>> list;
  for (int i = 0; i < shards; ++i) {
    list.push_back(std::make_unique<BfcAllocator>(
        std::make_unique<SimulatedSubAllocator>(16 * kGiB), limit, Quiet()));
  }
  absl::StatusOr<std::unique_ptr<ShardedAllocator>> sharded =
      ShardedAllocator::Create(std::move(list));
  EXPECT_TRUE(sharded.ok()) << sharded.status();
  return *std::move(sharded);
}

// The shard whose upstream range holds `ptr`, or -1.
int ShardOf(ShardedAllocator& sharded, const void* ptr) {
  for (int i = 0; i < sharded.num_shards(); ++i) {
    const auto* base =
        static_cast<const char*>(sharded.shard(i).upstream().BaseAddress());
    if (ptr >= base && ptr < base + 16 * kGiB) return i;
  }
  return -1;
}

TEST(ShardedAllocatorTest, RefusesUpstreamsWithoutAFixedRange) {
  std::vector<std::unique_ptr<BfcAllocator>> list;
  list.push_back(std::make_unique<BfcAllocator>(
      std::make_unique<HostSubAllocator>(), kMiB, Quiet()));
  absl::StatusOr<std::unique_ptr<ShardedAllocator>> sharded =
      ShardedAllocator::Create(std::move(list));
  ASSERT_FALSE(sharded.ok());
  EXPECT_NE(sharded.status().message().find("fixed address range"),
            std::string::npos)
      << sharded.status();
  EXPECT_FALSE(ShardedAllocator::Create({}).ok());
}

TEST(ShardedAllocatorTest, ThreadsGetShardsAndAnyThreadMayFree) {
  std::unique_ptr<ShardedAllocator> sharded = MakeSharded(2, kGiB);
  void* a = nullptr;
  void* b = nullptr;
  // Two threads alive at once take different shards.
  std::latch both_allocated(2);
  std::thread first([&] {
    a = sharded->Allocate(4096);
    both_allocated.arrive_and_wait();
  });
  std::thread second([&] {
    b = sharded->Allocate(4096);
    both_allocated.arrive_and_wait();
  });
  first.join();
  second.join();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(ShardOf(*sharded, a), ShardOf(*sharded, b));
  EXPECT_EQ(sharded->AllocatedSize(a), 4096u);
  EXPECT_EQ(sharded->GetStats()->bytes_in_use, 8192u);
  EXPECT_EQ(sharded->GetStats()->bytes_limit, 2 * kGiB);
  EXPECT_TRUE(sharded->CheckedDeallocate(a).ok());   // by another thread
  EXPECT_FALSE(sharded->CheckedDeallocate(a).ok());  // double free
  EXPECT_FALSE(
      sharded->CheckedDeallocate(static_cast<char*>(b) + 256).ok());  // inside
  int on_stack = 0;
  EXPECT_FALSE(sharded->CheckedDeallocate(&on_stack).ok());  // never handed
  EXPECT_EQ(sharded->GetStats()->bytes_in_use, 4096u);
  EXPECT_TRUE(sharded->CheckedDeallocate(b).ok());
  EXPECT_EQ(sharded->GetStats()->bytes_in_use, 0u);
}

// Threads that came and went before give their numbers back: a long-lived
// thread and three new ones, alive at once, still take four different shards
// (with numbers handed out by a counter, three threads in between put the
// fourth new one on the long-lived thread's shard).
TEST(ShardedAllocatorTest, ThreadsAliveAtOnceTakeDifferentShards) {
  std::unique_ptr<ShardedAllocator> sharded = MakeSharded(4, kGiB);
  std::vector<void*> blocks;
  blocks.push_back(sharded->Allocate(4096));  // this thread, long-lived
  for (int i = 0; i < 3; ++i) {
    std::thread([&] { sharded->Deallocate(sharded->Allocate(4096)); }).join();
  }
  std::mutex mutex;
  std::latch all_allocated(3);
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      void* block = sharded->Allocate(4096);
      {
        std::lock_guard<std::mutex> lock(mutex);
        blocks.push_back(block);
      }
      all_allocated.arrive_and_wait();
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::set<int> shards;
  for (void* block : blocks) {
    ASSERT_NE(block, nullptr);
    shards.insert(ShardOf(*sharded, block));
  }
  EXPECT_EQ(shards.size(), 4u);
  for (void* block : blocks) sharded->Deallocate(block);
}

TEST(ShardedAllocatorTest, AFullShardPassesTheRequestOn) {
  std::unique_ptr<ShardedAllocator> sharded = MakeSharded(2, kMiB);
  void* first = sharded->Allocate(768 * kKiB);
  void* second = sharded->Allocate(768 * kKiB);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_NE(ShardOf(*sharded, first), ShardOf(*sharded, second));
  EXPECT_EQ(sharded->Allocate(768 * kKiB), nullptr);  // both full
  sharded->Deallocate(first);
  sharded->Deallocate(second);
}

// Four threads allocate and free at random, freeing some of each other's
// blocks; no byte is ever handed to two live blocks.
TEST(ShardedAllocatorTest, ThreadsNeverShareBytes) {
  std::unique_ptr<ShardedAllocator> sharded = MakeSharded(2, 4 * kGiB);
  std::mutex mutex;
  std::map<uintptr_t, size_t> live;  // start -> size
  bool overlap = false;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 random(t);
      for (int i = 0; i < 5000; ++i) {
        std::unique_lock lock(mutex);
        if (live.empty() || random() % 2 == 0) {
          lock.unlock();
          const size_t bytes = 1 + random() % (1 << 20);
          void* p = sharded->Allocate(bytes);
          ASSERT_NE(p, nullptr);
          lock.lock();
          const auto start = reinterpret_cast<uintptr_t>(p);
          auto next = live.lower_bound(start);
          if (next != live.end() && next->first < start + bytes) overlap = true;
          if (next != live.begin() &&
              std::prev(next)->first + std::prev(next)->second > start)
            overlap = true;
          live[start] = bytes;
        } else {
          auto victim = std::next(live.begin(), random() % live.size());
          void* p = reinterpret_cast<void*>(victim->first);
          live.erase(victim);
          lock.unlock();
          ASSERT_TRUE(sharded->CheckedDeallocate(p).ok());
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_FALSE(overlap);
  for (const auto& [start, size] : live)
    ASSERT_TRUE(
        sharded->CheckedDeallocate(reinterpret_cast<void*>(start)).ok());
  EXPECT_EQ(sharded->GetStats()->bytes_in_use, 0u);
  for (int i = 0; i < sharded->num_shards(); ++i)
    EXPECT_TRUE(sharded->shard(i).CheckInvariants().ok());
}

TEST(ShardedAllocatorTest, SpecificationOption) {
  AllocatorSpec spec;
  EXPECT_FALSE(SetAllocatorOption(spec, "shards", "0").ok());
  EXPECT_FALSE(SetAllocatorOption(spec, "shards", "17").ok());
  EXPECT_FALSE(SetAllocatorOption(spec, "shards", "two").ok());
  ASSERT_TRUE(SetAllocatorOption(spec, "shards", "2").ok());
  spec.capacity = 8 * kGiB;
  spec.memory_limit = 2 * kGiB;
  EXPECT_NE(DescribeAllocator(spec).find("2 shards"), std::string::npos);
  absl::StatusOr<BuiltAllocator> built = CreateAllocator(spec, Quiet());
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(built->bfc, nullptr);
  EXPECT_EQ(built->allocator->GetStats()->bytes_limit, 2 * kGiB);
  void* p = built->allocator->Allocate(1000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(built->allocator->AllocatedSize(p), 1024u);
  built->allocator->Deallocate(p);

  spec.sub_allocator = "host";
  absl::Status host = ValidateAllocatorSpec(spec);
  EXPECT_FALSE(host.ok());
  EXPECT_NE(host.message().find("shards"), std::string::npos) << host;
}

}  // namespace
}  // namespace tensormem
