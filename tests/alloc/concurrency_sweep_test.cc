// A long randomized run from four threads under every registered policy
// choice (AllPolicyChoices: each policy with its defaults and in each of its
// example configurations): allocations, frees, statistics, dumps and region
// release (GC) at once. Under ThreadSanitizer it proves the locking; in every
// build the invariant checker and the statistics are checked at quiescent
// points, when all threads wait at a barrier.
#include <barrier>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "alloc/bfc_test_util.h"
#include "alloc/policy_test_util.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"

namespace tensormem {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr int kRounds = 20;
#else
constexpr int kRounds = 40;
#endif
constexpr int kThreads = 4;
constexpr int kCallsPerRound = 300;

struct Worker {
  std::mt19937_64 rng;
  std::vector<std::pair<void*, size_t>> live;
};

// One thread's calls for one round; `limit` bounds the sizes.
void RunCalls(BfcAllocator& allocator, Worker& worker, uint64_t limit) {
  for (int call = 0; call < kCallsPerRound; ++call) {
    const int action = worker.rng() % 100;
    if (action < 50 || worker.live.empty()) {
      const size_t bytes = 1 + worker.rng() % (1 << (worker.rng() % 22));
      const size_t alignment = size_t{1} << (worker.rng() % 12);
      if (void* block = allocator.AllocateRaw(alignment, bytes)) {
        worker.live.push_back({block, bytes});
      }
    } else if (action < 90) {
      const size_t victim = worker.rng() % worker.live.size();
      allocator.Deallocate(worker.live[victim].first);
      worker.live[victim] = worker.live.back();
      worker.live.pop_back();
    } else if (action < 95) {
      const std::optional<AllocatorStats> stats = allocator.GetStats();
      ASSERT_TRUE(stats.has_value());
      ASSERT_LE(stats->bytes_in_use, limit);
    } else if (action < 98) {
      (void)allocator.RecordMemoryDump().ToText();
    } else {
      allocator.ReleaseFreeRegions();
    }
  }
}

class ConcurrencySweepTest
    : public ::testing::TestWithParam<testing::PolicyChoice> {};

TEST_P(ConcurrencySweepTest, FourThreadsKeepInvariantsAtQuiescentPoints) {
  const testing::PolicyChoice& choice = GetParam();
  const uint64_t limit = 256 * kMiB;
  BfcAllocator::Options options = testing::QuietOptions(/*allow_growth=*/true);
  options.garbage_collection = true;
  absl::StatusOr<std::unique_ptr<BfcAllocator>> made =
      testing::MakeChoiceBfc(choice,
                             std::make_unique<SimulatedSubAllocator>(
                                 4 * limit, choice.NeedsCoalescing()),
                             limit, options);
  ASSERT_TRUE(made.ok()) << choice.Label() << ": " << made.status();
  std::unique_ptr<BfcAllocator> allocator = *std::move(made);
  std::vector<Worker> workers(kThreads);
  for (int i = 0; i < kThreads; ++i) workers[i].rng.seed(1000 + i);

  std::barrier round_done(kThreads + 1);
  std::barrier round_checked(kThreads + 1);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < kRounds; ++round) {
        RunCalls(*allocator, workers[i], limit);
        round_done.arrive_and_wait();
        round_checked.arrive_and_wait();
      }
    });
  }
  int checked_rounds = 0;
  for (int round = 0; round < kRounds; ++round) {
    round_done.arrive_and_wait();
    // Quiescent: no thread is inside the allocator.
    EXPECT_TRUE(testing::InvariantsHold(*allocator)) << "round " << round;
    uint64_t allocated = 0;
    for (const Worker& worker : workers) {
      for (const auto& [block, bytes] : worker.live) {
        const std::optional<size_t> size = allocator->AllocatedSize(block);
        ASSERT_TRUE(size.has_value()) << "round " << round;
        EXPECT_GE(*size, bytes);
        allocated += *size;
      }
    }
    EXPECT_EQ(allocator->GetStats()->bytes_in_use, allocated)
        << "round " << round;
    ++checked_rounds;
    round_checked.arrive_and_wait();
  }
  for (std::thread& thread : threads) thread.join();
  for (Worker& worker : workers) {
    for (const auto& [block, bytes] : worker.live) allocator->Deallocate(block);
  }
  EXPECT_EQ(checked_rounds, kRounds);
  EXPECT_EQ(allocator->GetStats()->bytes_in_use, 0u);
  EXPECT_TRUE(testing::InvariantsHold(*allocator));
  // The report (tools/reliability-report) adds up the first line over the
  // policy choices and prints the second once.
  std::printf("[sweep] concurrency policy choices: 1\n");
  std::printf("[sweep] concurrency: %d threads x %d rounds x %d calls\n",
              kThreads, kRounds, kCallsPerRound);
}

INSTANTIATE_TEST_SUITE_P(
    Policies, ConcurrencySweepTest,
    ::testing::ValuesIn(testing::AllPolicyChoices()),
    [](const ::testing::TestParamInfo<testing::PolicyChoice>& info) {
      return info.param.TestName();
    });

}  // namespace
}  // namespace tensormem
