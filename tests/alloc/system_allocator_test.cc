// Tests of SystemAllocator: sizes, statistics, misuse and threads.
#include "tensormem/alloc/system_allocator.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

TEST(SystemAllocatorTest, HonoursAlignmentAndReportsSizes) {
  SystemAllocator system;
  EXPECT_EQ(system.Name(), "system");
  for (size_t alignment :
       {size_t{1}, size_t{8}, size_t{64}, size_t{256}, size_t{4096}}) {
    void* p = system.Allocate(1000, alignment);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u);
    std::memset(p, 0x5a, 1000);
    EXPECT_EQ(system.RequestedSize(p), 1000u);
    EXPECT_GE(system.AllocatedSize(p).value_or(0), 1000u);
    EXPECT_TRUE(system.CheckedDeallocate(p).ok());
    EXPECT_FALSE(system.RequestedSize(p).has_value());
  }
}

TEST(SystemAllocatorTest, RefusesBadRequestsWithNull) {
  SystemAllocator system;
  EXPECT_EQ(system.Allocate(0), nullptr);
  EXPECT_EQ(system.Allocate(64, 48), nullptr);  // alignment not a power of two
  EXPECT_EQ(system.Allocate(64, 0), nullptr);
  EXPECT_EQ(system.Allocate(SIZE_MAX - 10), nullptr);
  EXPECT_EQ(system.GetStats()->num_allocs, 0);
}

TEST(SystemAllocatorTest, KeepsStatisticsWithTensorFlowNames) {
  SystemAllocator system;
  void* a = system.Allocate(4096);
  void* b = system.Allocate(100);
  const size_t a_size = *system.AllocatedSize(a);
  const size_t b_size = *system.AllocatedSize(b);
  AllocatorStats stats = *system.GetStats();
  EXPECT_EQ(stats.num_allocs, 2);
  EXPECT_EQ(stats.bytes_in_use, a_size + b_size);
  EXPECT_EQ(stats.peak_bytes_in_use, a_size + b_size);
  EXPECT_EQ(stats.largest_alloc_size, a_size);
  EXPECT_EQ(stats.pool_bytes, a_size + b_size);
  EXPECT_FALSE(stats.bytes_limit.has_value());
  system.Deallocate(a);
  EXPECT_TRUE(system.ClearStats());
  stats = *system.GetStats();
  EXPECT_EQ(stats.num_allocs, 0);
  EXPECT_EQ(stats.bytes_in_use, b_size);
  EXPECT_EQ(stats.peak_bytes_in_use, b_size);  // reset to what is in use now
  EXPECT_EQ(stats.largest_alloc_size, 0u);
  system.Deallocate(b);
  EXPECT_EQ(system.GetStats()->bytes_in_use, 0u);
  EXPECT_EQ(system.GetStats()->peak_bytes_in_use, b_size);
}

TEST(SystemAllocatorTest, DetectsMisuseWithoutChangingState) {
  SystemAllocator system;
  char* p = static_cast<char*>(system.Allocate(512));
  const AllocatorStats before = *system.GetStats();
  absl::Status interior = system.CheckedDeallocate(p + 8);
  EXPECT_EQ(interior.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(interior.message()), HasSubstr("not a live block"));
  int on_stack = 0;
  EXPECT_FALSE(system.CheckedDeallocate(&on_stack).ok());
  EXPECT_EQ(system.GetStats()->bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(system.RequestedSize(p), 512u);
  EXPECT_TRUE(system.CheckedDeallocate(p).ok());
  EXPECT_FALSE(system.CheckedDeallocate(p).ok());  // double free
  EXPECT_TRUE(system.CheckedDeallocate(nullptr).ok());
}

TEST(SystemAllocatorTest, PlainDeallocateHandsMisuseToThePolicy) {
  SystemAllocator system;
  std::vector<std::string> reported;
  system.SetMisusePolicy(MisusePolicy::kCallback,
                         [&reported](const absl::Status& status) {
                           reported.emplace_back(status.message());
                         });
  void* p = system.Allocate(64);
  system.Deallocate(p);
  system.Deallocate(p);
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_THAT(reported[0], HasSubstr("already freed"));
  system.SetMisusePolicy(MisusePolicy::kLogAndIgnore);
  system.Deallocate(p);  // logs, does not abort
  EXPECT_EQ(system.GetStats()->bytes_in_use, 0u);
}

TEST(SystemAllocatorDeathTest, DefaultPolicyAbortsOnMisuse) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  SystemAllocator system;
  int on_stack = 0;
  EXPECT_DEATH(system.Deallocate(&on_stack), "not a live block");
}

TEST(SystemAllocatorTest, ThreadsKeepTheBooksStraight) {
  SystemAllocator system;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&system, t] {
      std::vector<void*> held;
      for (int i = 0; i < 5000; ++i) {
        held.push_back(system.Allocate(16 + (i * 37 + t) % 2000));
        if (held.size() > 8) {
          EXPECT_TRUE(system.CheckedDeallocate(held.front()).ok());
          held.erase(held.begin());
        }
      }
      for (void* p : held) EXPECT_TRUE(system.CheckedDeallocate(p).ok());
    });
  }
  for (std::thread& thread : threads) thread.join();
  const AllocatorStats stats = *system.GetStats();
  EXPECT_EQ(stats.num_allocs, 20000);
  EXPECT_EQ(stats.bytes_in_use, 0u);
  EXPECT_GT(stats.peak_bytes_in_use, 0u);
}

}  // namespace
}  // namespace tensormem
