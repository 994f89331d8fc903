// BFC allocator behaviour beyond the basic scenarios: alignment, retry,
// misuse, overflow, failing upstreams and timestamped frees.
#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "alloc/bfc_test_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/fault_injecting_sub_allocator.h"
#include "tensormem/alloc/host_sub_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"

namespace tensormem {
namespace {

using testing::InvariantsHold;
using testing::MakeSimulatedBfc;
using testing::QuietOptions;

TEST(BfcAlignmentTest, HonoursAlignments) {
  auto allocator = MakeSimulatedBfc(64 * kMiB, QuietOptions(true));
  for (size_t alignment = 32; alignment <= 4096; alignment *= 2) {
    // An odd-sized block first, so the next fit is not already aligned.
    ASSERT_NE(allocator->AllocateRaw(1, 256), nullptr);
    void* p = allocator->AllocateRaw(alignment, 1000);
    ASSERT_NE(p, nullptr) << alignment;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % std::max<size_t>(alignment, 256),
              0u)
        << alignment;
    ASSERT_TRUE(InvariantsHold(*allocator));
  }
}

TEST(BfcAlignmentTest, BadAlignmentIsRejected) {
  auto allocator = MakeSimulatedBfc(64 * kMiB, QuietOptions(true));
  EXPECT_EQ(allocator->AllocateRaw(48, 1024), nullptr);
  EXPECT_NE(allocator->LastFailureReport().find("power of two"),
            std::string::npos);
  EXPECT_EQ(allocator->AllocateRaw(0, 1024), nullptr);
}

TEST(BfcAlignmentTest, MixedAlignedStress) {
  auto allocator = MakeSimulatedBfc(256 * kMiB, QuietOptions(true));
  std::mt19937 rng(7);
  struct Block {
    void* ptr;
    size_t alignment;
  };
  std::vector<Block> blocks;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 350; ++i) {
      const size_t alignment = size_t{1} << (rng() % 14);  // 1 .. 8192
      const size_t bytes = 1 + rng() % 20000;
      void* p = allocator->AllocateRaw(alignment, bytes);
      ASSERT_NE(p, nullptr)
          << round << " " << i << ": " << allocator->LastFailureReport();
      ASSERT_EQ(
          reinterpret_cast<uintptr_t>(p) % std::max<size_t>(alignment, 256),
          0u);
      blocks.push_back({p, alignment});
    }
    std::shuffle(blocks.begin(), blocks.end(), rng);
    for (size_t i = 0; i < blocks.size() / 2; ++i)
      allocator->Deallocate(blocks[i].ptr);
    blocks.erase(blocks.begin(), blocks.begin() + blocks.size() / 2);
    ASSERT_TRUE(InvariantsHold(*allocator));
  }
  for (const Block& block : blocks) allocator->Deallocate(block.ptr);
  EXPECT_EQ(allocator->GetStats()->bytes_in_use, 0u);
}

TEST(BfcRetryTest, WaitsForAFreeWithinTheDeadline) {
  BfcAllocator::Options options = QuietOptions(false);
  options.allow_retry_on_failure = true;
  options.retry_deadline = absl::Seconds(1);
  auto allocator = MakeSimulatedBfc(1 * kMiB, options);
  void* held = allocator->AllocateRaw(1, 768 * kKiB);
  ASSERT_NE(held, nullptr);
  absl::Notification first_attempt_failed;
  std::thread consumer([&] {
    absl::SleepFor(absl::Milliseconds(20));
    allocator->Deallocate(held);
  });
  void* p = allocator->AllocateRaw(1, 512 * kKiB);
  consumer.join();
  EXPECT_NE(p, nullptr);
}

TEST(BfcRetryTest, ZeroDeadlineFailsAtOnce) {
  BfcAllocator::Options options = QuietOptions(false);
  options.allow_retry_on_failure = true;
  options.retry_deadline = absl::ZeroDuration();
  auto allocator = MakeSimulatedBfc(1 * kMiB, options);
  void* held = allocator->AllocateRaw(1, 768 * kKiB);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(allocator->AllocateRaw(1, 512 * kKiB), nullptr);
  allocator->Deallocate(held);
  EXPECT_NE(allocator->AllocateRaw(1, 512 * kKiB), nullptr);
}

TEST(BfcRetryTest, CapacityLimitedConsumers) {
  // Four threads share room for three blocks; waiting makes every request
  // succeed.
  BfcAllocator::Options options = QuietOptions(false);
  options.allow_retry_on_failure = true;
  options.retry_deadline = absl::Seconds(1);
  auto allocator = MakeSimulatedBfc(1 * kMiB, options);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        void* p = allocator->AllocateRaw(1, 300 * kKiB);
        if (p == nullptr) {
          ++failures;
          continue;
        }
        absl::SleepFor(absl::Microseconds(100));
        allocator->Deallocate(p);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_TRUE(InvariantsHold(*allocator));
}

TEST(BfcRetryTest, RequestOverLimitDoesNotWait) {
  BfcAllocator::Options options = QuietOptions(false);
  options.allow_retry_on_failure = true;
  options.retry_deadline = absl::Seconds(60);
  auto allocator = MakeSimulatedBfc(1 * kMiB, options);
  EXPECT_EQ(allocator->AllocateRaw(1, 2 * kMiB),
            nullptr);  // would hang for 60 s otherwise
}

TEST(BfcMisuseTest, CheckedDeallocateReportsAndChangesNothing) {
  auto allocator = MakeSimulatedBfc(16 * kMiB, QuietOptions(true));
  char* p = static_cast<char*>(allocator->AllocateRaw(1, 4096));
  char* q = static_cast<char*>(allocator->AllocateRaw(1, 4096));
  ASSERT_NE(p, nullptr);
  const std::string before = allocator->RecordMemoryDump().ToJson().dump();
  int on_stack = 0;
  absl::Status unknown = allocator->CheckedDeallocate(&on_stack);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("never handed out"), std::string::npos)
      << unknown;
  absl::Status interior = allocator->CheckedDeallocate(p + 256);
  EXPECT_NE(interior.message().find("interior"), std::string::npos) << interior;
  EXPECT_EQ(allocator->RecordMemoryDump().ToJson().dump(), before);
  ASSERT_TRUE(allocator->CheckedDeallocate(p).ok());
  absl::Status twice = allocator->CheckedDeallocate(p);
  EXPECT_EQ(twice.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(twice.message().find("already freed"), std::string::npos) << twice;
  EXPECT_TRUE(allocator->CheckedDeallocate(nullptr).ok());
  ASSERT_TRUE(InvariantsHold(*allocator));
  allocator->Deallocate(q);
}

TEST(BfcMisuseTest, PoliciesForPlainDeallocate) {
  BfcAllocator::Options options = QuietOptions(true);
  std::vector<absl::Status> reported;
  options.misuse_policy = MisusePolicy::kCallback;
  options.misuse_callback = [&](const absl::Status& status) {
    reported.push_back(status);
  };
  auto allocator = MakeSimulatedBfc(16 * kMiB, options);
  void* p = allocator->AllocateRaw(1, 4096);
  allocator->Deallocate(p);
  allocator->Deallocate(p);
  ASSERT_EQ(reported.size(), 1u);
  allocator->SetMisusePolicy(MisusePolicy::kLogAndIgnore);
  allocator->Deallocate(p);  // logged, ignored
  ASSERT_TRUE(InvariantsHold(*allocator));
}

TEST(BfcMisuseDeathTest, DefaultPolicyAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto allocator = MakeSimulatedBfc(16 * kMiB, QuietOptions(true));
        void* p = allocator->AllocateRaw(1, 4096);
        allocator->Deallocate(p);
        allocator->Deallocate(p);
      },
      "already freed");
}

TEST(BfcLimitsTest, OverflowingRequestsReturnNull) {
  auto allocator = MakeSimulatedBfc(16 * kMiB, QuietOptions(true));
  EXPECT_EQ(allocator->AllocateRaw(1, SIZE_MAX - 10), nullptr);
  EXPECT_EQ(allocator->AllocateRaw(1, SIZE_MAX), nullptr);
  EXPECT_EQ(allocator->AllocateRaw(size_t{1} << 63, 1024), nullptr);
  EXPECT_EQ(allocator->Allocate(SIZE_MAX - 10), nullptr);
  EXPECT_EQ(allocator->GetStats()->num_allocs, 0);
  EXPECT_NE(allocator->AllocateRaw(1, 1024), nullptr);
}

TEST(BfcLimitsTest, AlwaysFailingUpstreamIsCalledBoundedTimes) {
  for (const size_t bytes :
       {size_t{256}, size_t{2304}, size_t{1} << 20, size_t{100} << 20}) {
    auto upstream = std::make_unique<FaultInjectingSubAllocator>(
        std::make_unique<HostSubAllocator>());
    upstream->SetFailAlways(true);
    FaultInjectingSubAllocator* faulty = upstream.get();
    BfcAllocator::Options options = QuietOptions(true);
    options.garbage_collection = true;
    BfcAllocator allocator(std::move(upstream), 1 * kGiB, options);
    EXPECT_EQ(allocator.AllocateRaw(1, bytes), nullptr);
    // 2 MiB shrinking by 0.9 down to 256 bytes takes under 90 calls.
    EXPECT_GT(faulty->alloc_calls(), 0);
    EXPECT_LE(faulty->alloc_calls(), 100) << bytes;
  }
}

TEST(BfcLimitsTest, BackpedalsToWhatTheUpstreamHas) {
  // The upstream holds 3 MiB; growth asks for 4 MiB, then backs off by 0.9.
  BfcAllocator allocator(std::make_unique<SimulatedSubAllocator>(3 * kMiB),
                         64 * kMiB, QuietOptions(true));
  void* p = allocator.AllocateRaw(1, 2 * kMiB + 256);
  ASSERT_NE(p, nullptr) << allocator.LastFailureReport();
  EXPECT_LE(allocator.GetStats()->pool_bytes, 3 * kMiB);
  ASSERT_TRUE(InvariantsHold(allocator));
}

TEST(BfcLimitsTest, RepeatedGrowthAndCollectionNeverWraps) {
  // Each extension doubles the next region size; 100 rounds of grow and give
  // back would wrap a 64-bit size without saturation.
  BfcAllocator allocator(std::make_unique<SimulatedSubAllocator>(4 * kGiB),
                         SIZE_MAX, QuietOptions(true));
  for (int round = 0; round < 100; ++round) {
    void* p = allocator.AllocateRaw(1, 1024);
    ASSERT_NE(p, nullptr) << round << ": " << allocator.LastFailureReport();
    allocator.Deallocate(p);
    ASSERT_TRUE(allocator.ReleaseFreeRegions());
  }
  EXPECT_EQ(allocator.GetStats()->pool_bytes, 0u);
}

TEST(BfcTimestampTest, UnsafeChunksWaitForTheFrontier) {
  auto allocator = MakeSimulatedBfc(1 * kMiB, QuietOptions(false));
  SharedCounter counter;
  allocator->SetTimingCounter(&counter);
  void* a = allocator->AllocateRaw(1, 4096);
  void* keep = allocator->AllocateRaw(1, 4096);
  counter.next();
  counter.next();
  allocator->Deallocate(a);  // stamped 3
  // freed_before = n admits chunks freed at counts <= n.
  const std::function<uint64_t()> before_free = [] { return uint64_t{2}; };
  const std::function<uint64_t()> after_free = [] { return uint64_t{3}; };
  AllocationAttributes early;
  early.freed_by_func = &before_free;
  AllocationAttributes late;
  late.freed_by_func = &after_free;
  // Work ordered before the free must not reuse `a`; work ordered after may.
  void* b = allocator->AllocateRaw(1, 4096, early);
  EXPECT_NE(b, a);
  // With no other room, the early caller's failure names the order rule.
  void* hog = allocator->AllocateRaw(1, 1 * kMiB - 3 * 4096, early);
  ASSERT_NE(hog, nullptr);
  EXPECT_EQ(allocator->AllocateRaw(1, 4096, early), nullptr);
  EXPECT_NE(allocator->LastFailureReport().find("freed before count 2"),
            std::string::npos)
      << allocator->LastFailureReport();
  allocator->Deallocate(hog);  // stamped 4
  void* c = allocator->AllocateRaw(1, 4096, late);
  EXPECT_EQ(c, a);
  ASSERT_TRUE(InvariantsHold(*allocator));
  allocator->Deallocate(c);     // stamped 5
  allocator->Deallocate(b);     // stamped 6
  allocator->Deallocate(keep);  // stamped 7
  // Stamped chunks stay apart until the frontier passes them.
  EXPECT_EQ(allocator->RecordMemoryDump().regions[0].chunks.size(), 4u);
  ASSERT_TRUE(InvariantsHold(*allocator));
  allocator->SetSafeFrontier(8);
  allocator->SetSafeFrontier(1);  // never moves back
  void* d = allocator->AllocateRaw(1, 3 * 4096);
  EXPECT_EQ(d, a);
  EXPECT_EQ(allocator->RecordMemoryDump().regions[0].chunks.size(), 2u);
  ASSERT_TRUE(InvariantsHold(*allocator));
  allocator->Deallocate(d);
}

TEST(BfcTimestampTest, ForcedMergeWhenOtherwiseOutOfMemory) {
  auto allocator = MakeSimulatedBfc(1 * kMiB, QuietOptions(false));
  SharedCounter counter;
  allocator->SetTimingCounter(&counter);
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i)
    blocks.push_back(allocator->AllocateRaw(1, 256 * kKiB));
  for (void* p : blocks) allocator->Deallocate(p);
  // Four unsafe 256 KiB chunks; a 1 MiB request forces them together.
  void* whole = allocator->AllocateRaw(1, 1 * kMiB);
  EXPECT_EQ(whole, blocks[0]);
  ASSERT_TRUE(InvariantsHold(*allocator));
}

}  // namespace
}  // namespace tensormem
