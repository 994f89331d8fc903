// A trace replayed pass after pass into one allocator, as a training loop
// runs its iterations: under `tight`, whose holes go back to the upstream and
// come back at other addresses, the address range the pool spans must stay
// bounded, not grow with every pass (the range is a reservation on a GPU, and
// the live table's pages follow it).
#include <string>

#include "gtest/gtest.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/trace/replay.h"
#include "tensormem/trace/replay_allocator.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem {
namespace {

uint64_t AddressSpan(const ReplayTarget& target) {
  uint64_t span = 0;
  for (const MemoryDump::Region& region : target.dump().regions)
    span += region.size;
  return span;
}

class TrainingLoopTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TrainingLoopTest, TheAddressRangeStaysBounded) {
  const std::string path = std::string(TENSORMEM_SOURCE_DIR) + "/data/models/" +
                           GetParam() + ".trace.gz";
  absl::StatusOr<Trace> trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status();
  absl::StatusOr<PreparedTrace> prepared = PreparedTrace::Prepare(*trace);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  AllocatorSpec spec;  // tight, growth, a coalescing simulated upstream
  absl::StatusOr<ReplayTarget> target = CreateReplayTarget(spec);
  ASSERT_TRUE(target.ok()) << target.status();
  ReplayMetrics metrics;
  constexpr int kPasses = 40;
  for (int pass = 0; pass < kPasses; ++pass)
    TimeReplay(*prepared, *target, metrics);
  const uint64_t peak_pool =
      static_cast<uint64_t>(target->allocator->GetStats()->peak_pool_bytes);
  // Holes hold back at most what the pool ever committed, plus what one
  // growth gives back. Unbounded, these traces reached 9-22x by pass 40.
  EXPECT_LE(AddressSpan(*target), 2 * peak_pool + peak_pool / 4)
      << "peak pool " << peak_pool;
  EXPECT_GT(peak_pool, 0u);
}

INSTANTIATE_TEST_SUITE_P(InferenceAtBatch8, TrainingLoopTest,
                         ::testing::Values("mobilenet_v2.infer_b8",
                                           "efficientnet_b0.infer_b8",
                                           "deeplabv3_mobilenet_v3.infer_b8"));

}  // namespace
}  // namespace tensormem
