// Per-stream pools against one shared pool, on hand-made traces.
#include "tensormem/trace/stream_pools.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/core/units.h"
#include "tensormem/trace/replay_allocator.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<ReplayTarget> MakeBfc() {
  AllocatorSpec config;
  config.policy = "tf";
  config.memory_limit = kGiB;
  config.capacity = kGiB;
  return CreateReplayTarget(config);
}

Trace Parsed(const char* text) {
  absl::StatusOr<Trace> trace = ParseTrace(text);
  EXPECT_TRUE(trace.ok()) << trace.status();
  return trace.ok() ? *trace : Trace{};
}

TEST(StreamPoolsTest, MemoryFreedOnOneStreamIsStrandedForAnother) {
  // Stream 1 frees 8 MiB, then stream 2 needs 8 MiB: a shared pool reuses
  // it, per-stream pools grow a second time.
  const Trace trace = Parsed(
      "# tensormem-trace v1\n"
      "a 1 8388608 stream=1\n"
      "f 1 stream=1\n"
      "a 2 8388608 stream=2\n"
      "f 2 stream=2\n");
  absl::StatusOr<StreamPoolsResult> result =
      SimulateStreamPools(trace, &MakeBfc);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->streams.size(), 2u);
  EXPECT_EQ(result->streams[1].stream, 2);
  EXPECT_GE(result->shared_peak_pool_bytes, 8 * kMiB);
  EXPECT_EQ(
      result->per_stream_peak_pool_bytes,
      result->streams[0].peak_pool_bytes + result->streams[1].peak_pool_bytes);
  EXPECT_GT(result->per_stream_peak_pool_bytes, result->shared_peak_pool_bytes);
  EXPECT_GE(result->peak_stranded_bytes, 8 * kMiB);
  EXPECT_EQ(result->avoidable_growths, 1);
  EXPECT_EQ(StreamPoolsToJson(*result)["avoidable_growths"], 1);
}

TEST(StreamPoolsTest, OneStreamStrandsNothing) {
  const Trace trace = Parsed(
      "# tensormem-trace v1\n"
      "a 1 8388608\n"
      "f 1\n"
      "a 2 8388608\n"
      "f 2\n");
  absl::StatusOr<StreamPoolsResult> result =
      SimulateStreamPools(trace, &MakeBfc);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->peak_stranded_bytes, 0u);
  EXPECT_EQ(result->avoidable_growths, 0);
  EXPECT_EQ(result->per_stream_peak_pool_bytes, result->shared_peak_pool_bytes);
}

TEST(StreamPoolsTest, ABadFreeNamesTheEvent) {
  const Trace trace = Parsed("# tensormem-trace v1\na 1 100\nf 1\n");
  Trace broken = trace;
  broken.events.push_back(TraceEvent::Free(7));
  absl::StatusOr<StreamPoolsResult> result =
      SimulateStreamPools(broken, &MakeBfc);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("event 2: free of id 7"));
}

}  // namespace
}  // namespace tensormem
