#include "tensormem/trace/replay.h"

#include <cstdlib>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

// Rounds every request up to 256 bytes and refuses to hold more than `limit`
// bytes: its minimum feasible limit is the peak of rounded live bytes.
class RoundingAllocator : public Allocator {
 public:
  explicit RoundingAllocator(uint64_t limit) : limit_(limit) {}
  ~RoundingAllocator() override {
    for (auto& [block, size] : sizes_) std::free(block);
  }
  std::string Name() const override { return "rounding"; }
  std::optional<size_t> AllocatedSize(const void* ptr) const override {
    return sizes_.at(const_cast<void*>(ptr));
  }
  std::optional<AllocatorStats> GetStats() const override {
    AllocatorStats stats;
    stats.bytes_in_use = stats.pool_bytes = in_use_;
    stats.peak_bytes_in_use = stats.peak_pool_bytes = peak_;
    stats.bytes_limit = limit_;
    return stats;
  }

 private:
  void* DoAllocate(size_t bytes, size_t /*alignment*/,
                   int32_t /*stream*/) override {
    const uint64_t rounded = (bytes + 255) / 256 * 256;
    if (bytes == 0 || in_use_ + rounded > limit_) return nullptr;
    void* block = std::malloc(rounded);
    sizes_[block] = rounded;
    in_use_ += rounded;
    peak_ = std::max(peak_, in_use_);
    return block;
  }
  absl::Status DoDeallocate(void* ptr) override {
    auto it = sizes_.find(ptr);
    if (it == sizes_.end())
      return absl::InvalidArgumentError("unknown pointer");
    in_use_ -= it->second;
    std::free(ptr);
    sizes_.erase(it);
    return absl::OkStatus();
  }

  const uint64_t limit_;
  uint64_t in_use_ = 0, peak_ = 0;
  absl::flat_hash_map<void*, uint64_t> sizes_;
};

ReplayTarget Target(uint64_t limit) {
  ReplayTarget target;
  target.allocator = std::make_unique<RoundingAllocator>(limit);
  target.explain_failure = [] { return std::string("no room"); };
  return target;
}

// live: 1000, 4000, 3000, 3500, 500, 0; rounded in use peaks at 4096.
Trace SmallTrace() {
  Trace trace;
  trace.events = {TraceEvent::Alloc(1, 1000), TraceEvent::Alloc(2, 3000),
                  TraceEvent::Free(1),        TraceEvent::Alloc(3, 500),
                  TraceEvent::Free(2),        TraceEvent::Free(3)};
  return trace;
}

PreparedTrace Prepare(const Trace& trace) {
  absl::StatusOr<PreparedTrace> prepared = PreparedTrace::Prepare(trace);
  EXPECT_TRUE(prepared.ok()) << prepared.status();
  return *std::move(prepared);
}

TEST(ReplayTest, MetricsOfAHandComputedTrace) {
  const PreparedTrace prepared = Prepare(SmallTrace());
  EXPECT_EQ(prepared.peak_live_bytes(), 4000u);
  ReplayTarget target = Target(kTiB);
  absl::StatusOr<ReplayResult> result = Replay(prepared, target, {});
  ASSERT_TRUE(result.ok()) << result.status();
  const ReplayMetrics& metrics = result->metrics;
  EXPECT_EQ(metrics.allocator, "rounding");
  EXPECT_EQ(metrics.events, 6);
  EXPECT_EQ(metrics.allocs, 3);
  EXPECT_EQ(metrics.frees, 3);
  EXPECT_EQ(metrics.failed_allocs, 0);
  EXPECT_EQ(metrics.peak_live_bytes, 4000u);
  EXPECT_EQ(result->peak_live_event, 1);
  EXPECT_EQ(metrics.peak_in_use_bytes, 4096u);
  EXPECT_EQ(metrics.peak_pool_bytes, 4096u);
  EXPECT_DOUBLE_EQ(metrics.fragmentation, 4096.0 / 4000.0);
  ASSERT_TRUE(metrics.stats.has_value());
  EXPECT_EQ(metrics.stats->peak_bytes_in_use, 4096u);
}

TEST(ReplayTest, FailedAllocationIsCountedAndItsFreeSkipped) {
  const PreparedTrace prepared = Prepare(SmallTrace());
  ReplayTarget target = Target(4000);  // 1024 + 3072 > 4000: id 2 fails
  absl::StatusOr<ReplayResult> result =
      Replay(prepared, target, {.record_offsets = true});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->metrics.failed_allocs, 1);
  EXPECT_EQ(result->metrics.allocs, 2);
  EXPECT_EQ(result->metrics.frees, 2);
  EXPECT_EQ(result->metrics.skipped_frees, 1);
  EXPECT_EQ(result->metrics.peak_live_bytes, 1000u);  // id 1, before its free
  ASSERT_EQ(result->failures.size(), 1u);
  EXPECT_EQ(result->failures[0].event, 1);
  EXPECT_EQ(result->failures[0].id, 2u);
  EXPECT_EQ(result->failures[0].bytes, 3000u);
  EXPECT_EQ(result->failures[0].live_bytes, 1000u);
  EXPECT_EQ(result->failures[0].pool_bytes, 1024u);
  EXPECT_EQ(result->failures[0].explanation, "no room");
  ASSERT_EQ(result->allocations.size(), 3u);
  EXPECT_FALSE(result->allocations[1].offset.has_value());
  EXPECT_EQ(result->allocations[0].allocated, 1024u);
  EXPECT_EQ(result->allocations[2].allocated, 512u);
}

TEST(ReplayTest, RecordedFailuresCountButAreNeverAttempted) {
  Trace trace = SmallTrace();
  TraceEvent failed = TraceEvent::Alloc(9, 1 << 20);
  failed.failed = true;
  trace.events.insert(trace.events.begin() + 2, failed);
  const PreparedTrace prepared = Prepare(trace);
  EXPECT_EQ(prepared.peak_live_bytes(), 4000u);
  ReplayTarget target = Target(kTiB);
  absl::StatusOr<ReplayResult> result = Replay(prepared, target, {});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->metrics.failed_allocs, 1);
  EXPECT_EQ(result->metrics.recorded_failures, 1);
  EXPECT_EQ(result->metrics.allocs, 3);
  EXPECT_TRUE(ReplaysWithoutFailure(prepared, target));
}

TEST(ReplayTest, MinimumLimitIsExactWhereKnown) {
  const PreparedTrace prepared = Prepare(SmallTrace());
  absl::StatusOr<MinimumLimit> limit = FindMinimumLimit(
      prepared,
      [](uint64_t limit) -> absl::StatusOr<ReplayTarget> {
        return Target(limit);
      },
      kTiB);
  ASSERT_TRUE(limit.ok()) << limit.status();
  EXPECT_EQ(limit->limit_bytes, 4096u);
  EXPECT_DOUBLE_EQ(limit->ratio, 4096.0 / 4000.0);
  EXPECT_GT(limit->replays, 1);
}

// Serves the small trace (peak live 4000 B) at 4096 B and from 6144 B up, and
// fails in between: a bisection lands on 6144, the scan on 4096.
absl::StatusOr<ReplayTarget> NonMonotoneTarget(uint64_t limit) {
  return Target(limit == 4096 || limit >= 6144 ? limit : 100);
}

TEST(ReplayTest, MinimumLimitScanFindsWhatBisectionMisses) {
  const PreparedTrace prepared = Prepare(SmallTrace());
  absl::StatusOr<MinimumLimit> limit =
      FindMinimumLimit(prepared, NonMonotoneTarget, kTiB);
  ASSERT_TRUE(limit.ok()) << limit.status();
  EXPECT_EQ(limit->method, MinLimitMethod::kExactScan);
  EXPECT_EQ(limit->bisection_limit_bytes, 6144u);
  EXPECT_EQ(limit->limit_bytes, 4096u);
  const nlohmann::json json = MinimumLimitToJson(*limit);
  EXPECT_EQ(json["min_limit_method"], "exact scan");
  EXPECT_EQ(json["min_limit_bytes"], 4096);
  EXPECT_EQ(json["min_limit_bisection_bytes"], 6144);
}

TEST(ReplayTest, MinimumLimitSaysWhenOnlyABisectionRan) {
  const PreparedTrace prepared = Prepare(SmallTrace());
  // 8 scan steps of 6 events each would be needed; the budget allows 7.
  absl::StatusOr<MinimumLimit> limit = FindMinimumLimit(
      prepared, NonMonotoneTarget, kTiB, /*scan_budget_events=*/7 * 6);
  ASSERT_TRUE(limit.ok()) << limit.status();
  EXPECT_EQ(limit->method, MinLimitMethod::kBisection);
  EXPECT_EQ(limit->limit_bytes, 6144u);
  EXPECT_EQ(MinimumLimitToJson(*limit)["min_limit_method"],
            "bisection (assumes monotone)");
  absl::StatusOr<MinimumLimit> scanned = FindMinimumLimit(
      prepared, NonMonotoneTarget, kTiB, /*scan_budget_events=*/8 * 6);
  ASSERT_TRUE(scanned.ok()) << scanned.status();
  EXPECT_EQ(scanned->limit_bytes, 4096u);
}

TEST(ReplayTest, MinimumLimitFailsCleanlyWhenNothingFits) {
  const PreparedTrace prepared = Prepare(SmallTrace());
  absl::StatusOr<MinimumLimit> limit = FindMinimumLimit(
      prepared,
      [](uint64_t) -> absl::StatusOr<ReplayTarget> { return Target(100); },
      kGiB);
  EXPECT_EQ(limit.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(limit.status().message(),
              HasSubstr("no memory limit up to 1.00GiB"));
}

TEST(ReplayTest, TimelineIsDecimatedAndKeepsThePeak) {
  Trace trace;
  for (uint64_t i = 0; i < 500; ++i) {
    trace.events.push_back(TraceEvent::Alloc(i, i == 250 ? 100000 : 100));
    trace.events.push_back(TraceEvent::Free(i));
  }
  const PreparedTrace prepared = Prepare(trace);
  ReplayTarget target = Target(kTiB);
  absl::StatusOr<ReplayResult> result =
      Replay(prepared, target, {.max_timeline_samples = 10});
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->timeline.size(), 10u);
  uint64_t peak = 0;
  for (const TimelineSample& sample : result->timeline)
    peak = std::max(peak, sample.live_bytes);
  EXPECT_EQ(peak, 100000u);
  EXPECT_EQ(result->timeline.back().event, 999);
  EXPECT_EQ(result->peak_live_event, 500);
}

TEST(ReplayTest, PlacementHasEventLifetimes) {
  const PreparedTrace prepared = Prepare(SmallTrace());
  ReplayTarget target = Target(kTiB);
  absl::StatusOr<ReplayResult> result =
      Replay(prepared, target, {.record_placement = true});
  ASSERT_TRUE(result.ok());
  const std::vector<Buffer>& buffers = result->placement.buffers;
  ASSERT_EQ(buffers.size(), 3u);
  EXPECT_EQ(buffers[0].lower, 0);
  EXPECT_EQ(buffers[0].upper, 2);
  EXPECT_EQ(buffers[1].lower, 1);
  EXPECT_EQ(buffers[1].upper, 4);
  EXPECT_EQ(buffers[2].id, 3u);
  EXPECT_EQ(buffers[2].upper, 5);
  EXPECT_EQ(PeakLiveBytes(result->placement), 4000u);
}

TEST(ReplayTest, TimingPassCountsOperations) {
  const PreparedTrace prepared = Prepare(SmallTrace());
  ReplayTarget target = Target(kTiB);
  ReplayMetrics metrics;
  TimeReplay(prepared, target, metrics);
  EXPECT_GT(metrics.seconds, 0);
  EXPECT_DOUBLE_EQ(metrics.ns_per_op, metrics.seconds * 1e9 / 6);
}

TEST(ReplayTest, PrepareRejectsInconsistentTraces) {
  Trace trace;
  trace.events = {TraceEvent::Alloc(1, 8), TraceEvent::Free(2)};
  EXPECT_THAT(PreparedTrace::Prepare(trace).status().message(),
              HasSubstr("event 1: free of id 2, which is not live"));
  trace.events = {TraceEvent::Alloc(1, 8), TraceEvent::Alloc(1, 8)};
  EXPECT_THAT(PreparedTrace::Prepare(trace).status().message(),
              HasSubstr("event 1: allocation of id 1, which is already live"));
  trace.events = {TraceEvent::Alloc(1, 8)};
  trace.events[0].alignment = 48;
  EXPECT_THAT(PreparedTrace::Prepare(trace).status().message(),
              HasSubstr("alignment 48 of id 1 is not a power of two"));
  trace.events = {TraceEvent::Alloc(1, ~uint64_t{0}), TraceEvent::Alloc(2, 2)};
  EXPECT_THAT(PreparedTrace::Prepare(trace).status().message(),
              HasSubstr("event 1: live bytes overflow"));
}

TEST(ReplayTest, JsonUsesTheDesignKeys) {
  ReplayMetrics metrics;
  metrics.allocator = "bfc";
  metrics.stats = AllocatorStats{};
  const nlohmann::json json = ReplayMetricsToJson(metrics);
  for (const char* key :
       {"allocator", "events", "allocs", "frees", "failed_allocs",
        "peak_live_bytes", "peak_in_use_bytes", "peak_pool_bytes",
        "fragmentation", "seconds", "ns_per_op", "stats"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  for (const char* key : {"num_allocs", "bytes_in_use", "peak_bytes_in_use",
                          "largest_alloc_size", "bytes_limit", "pool_bytes",
                          "peak_pool_bytes", "largest_free_block_bytes"}) {
    EXPECT_TRUE(json["stats"].contains(key)) << key;
  }
}

}  // namespace
}  // namespace tensormem
