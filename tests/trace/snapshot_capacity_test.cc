// A recording whose device capacity dropped between two out-of-memory
// retries (other users of the device took memory): no single limit
// reproduces it, a capacity in two steps does.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "tensormem/core/units.h"
#include "tensormem/trace/snapshot_replay.h"

namespace tensormem {
namespace {

using Kind = RecordedSegmentEvent::Kind;

constexpr uint64_t kMB = kMiB;

// A synthetic recording, built event by event as PyTorch's caching
// allocator records one (requests of 10 MiB and more get a segment of their
// own size; a free caches the block).
class RecordingBuilder {
 public:
  // An allocation served at `address`, after the segment events given.
  void Alloc(uint64_t id, uint64_t bytes, uint64_t address,
             std::vector<RecordedSegmentEvent> segments = {}) {
    for (RecordedSegmentEvent& segment : segments) {
      segment.before_event = trace_.events.size();
      segment.entry = entry_++;
      recording_.segments.push_back(segment);
    }
    recording_.addresses.push_back(address);
    recording_.entries.push_back(entry_++);
    trace_.events.push_back(TraceEvent::Alloc(id, bytes));
  }
  void Free(uint64_t id) {
    recording_.addresses.push_back(0);
    recording_.entries.push_back(entry_++);
    trace_.events.push_back(TraceEvent::Free(id));
  }
  // Segments released between two events (empty_cache()).
  void Release(std::vector<RecordedSegmentEvent> segments) {
    for (RecordedSegmentEvent& segment : segments) {
      segment.before_event = trace_.events.size();
      segment.entry = entry_++;
      recording_.segments.push_back(segment);
    }
  }

  // The recording, its peak and segment count filled in.
  PytorchRecording Recording() const {
    PytorchRecording recording = recording_;
    recording.config = "";  // the default settings, as recorded
    uint64_t reserved = 0;
    for (const RecordedSegmentEvent& segment : recording.segments) {
      reserved =
          segment.Adds() ? reserved + segment.bytes : reserved - segment.bytes;
      recording.peak_reserved_bytes =
          std::max(recording.peak_reserved_bytes, reserved);
      recording.segments_added += segment.Adds();
    }
    return recording;
  }
  const Trace& trace() const { return trace_; }

 private:
  Trace trace_;
  PytorchRecording recording_;
  size_t entry_ = 0;
};

RecordedSegmentEvent Segment(Kind kind, uint64_t address, uint64_t bytes) {
  RecordedSegmentEvent segment;
  segment.kind = kind;
  segment.address = address;
  segment.bytes = bytes;
  return segment;
}

constexpr uint64_t kA0 = 0x8000000, kA1 = 0x10000000, kA2 = 0x20000000,
                   kA3 = 0x30000000, kA4 = 0x40000000, kA5 = 0x50000000,
                   kA6 = 0x60000000;

// First retry (event 4): a 60 MB segment could not be had with 92 MB
// reserved, and could with 52 MB: capacity in [112, 152) MB. Then, after
// empty_cache(), with `second_retry`, a 36 MB segment could not be had with
// 72 MB reserved, and could with 30 MB (event 11): capacity in [66, 108) MB.
RecordingBuilder TwoRetries(bool second_retry) {
  RecordingBuilder b;
  b.Alloc(0, 12 * kMB, kA0, {Segment(Kind::kAlloc, kA0, 12 * kMB)});
  b.Alloc(1, 40 * kMB, kA1, {Segment(Kind::kAlloc, kA1, 40 * kMB)});
  b.Alloc(2, 40 * kMB, kA2, {Segment(Kind::kAlloc, kA2, 40 * kMB)});
  b.Free(2);
  b.Alloc(3, 60 * kMB, kA3,
          {Segment(Kind::kFree, kA2, 40 * kMB),
           Segment(Kind::kAlloc, kA3, 60 * kMB)});
  b.Free(3);
  b.Free(1);
  b.Release({Segment(Kind::kFree, kA1, 40 * kMB),
             Segment(Kind::kFree, kA3, 60 * kMB)});
  b.Free(0);
  b.Alloc(4, 30 * kMB, kA4, {Segment(Kind::kAlloc, kA4, 30 * kMB)});
  b.Alloc(5, 30 * kMB, kA5, {Segment(Kind::kAlloc, kA5, 30 * kMB)});
  b.Free(5);
  if (second_retry) {
    b.Alloc(6, 36 * kMB, kA6,
            {Segment(Kind::kFree, kA0, 12 * kMB),
             Segment(Kind::kFree, kA5, 30 * kMB),
             Segment(Kind::kAlloc, kA6, 36 * kMB)});
  }
  return b;
}

SnapshotReplayResult ReplayOf(const RecordingBuilder& built) {
  absl::StatusOr<PreparedTrace> trace = PreparedTrace::Prepare(built.trace());
  EXPECT_TRUE(trace.ok()) << trace.status();
  AllocatorSpec spec;
  spec.policy = "pytorch";
  absl::StatusOr<SnapshotReplayResult> result =
      ReplaySnapshot(*trace, built.Recording(), spec, {}, /*verify=*/true);
  EXPECT_TRUE(result.ok()) << result.status();
  return *std::move(result);
}

TEST(SnapshotCapacityTest, ACapacityThatDropsIsFoundInTwoSteps) {
  const SnapshotReplayResult result = ReplayOf(TwoRetries(true));
  const SnapshotComparison& comparison = result.comparison;
  EXPECT_EQ(comparison.divergences, 0)
      << comparison.first_divergence->recorded << "\n"
      << comparison.first_divergence->model;
  EXPECT_EQ(comparison.recorded_alloc_retries, 2);
  EXPECT_EQ(comparison.replayed_alloc_retries, 2);
  EXPECT_EQ(comparison.replayed_segments, 7);
  ASSERT_EQ(comparison.memory_limit_steps.size(), 2u);
  const SnapshotCapacityStep& first = comparison.memory_limit_steps[0];
  const SnapshotCapacityStep& second = comparison.memory_limit_steps[1];
  EXPECT_EQ(first.event, 0);
  EXPECT_GE(first.bytes, 112 * kMB);
  EXPECT_LT(first.bytes, 152 * kMB);
  // The drop shows at the second retry (event 11), the first event the
  // first step's capacity does not reproduce.
  EXPECT_EQ(second.event, 11);
  EXPECT_GE(second.bytes, 66 * kMB);
  EXPECT_LT(second.bytes, 108 * kMB);
  // The allocator's own limit is the largest step.
  EXPECT_EQ(comparison.memory_limit_inferred, first.bytes);

  const nlohmann::json json = SnapshotComparisonToJson(comparison);
  ASSERT_EQ(json["memory_limit_steps"].size(), 2u);
  EXPECT_EQ(json["memory_limit_steps"][1]["event"], 11);
  EXPECT_EQ(json["memory_limit_steps"][1]["bytes"], second.bytes);
}

TEST(SnapshotCapacityTest, OneLimitThatReproducesTheRecordingHasNoSteps) {
  const SnapshotReplayResult result = ReplayOf(TwoRetries(false));
  const SnapshotComparison& comparison = result.comparison;
  EXPECT_EQ(comparison.divergences, 0);
  EXPECT_EQ(comparison.replayed_alloc_retries, 1);
  ASSERT_TRUE(comparison.memory_limit_inferred.has_value());
  EXPECT_GE(*comparison.memory_limit_inferred, 112 * kMB);
  EXPECT_LT(*comparison.memory_limit_inferred, 152 * kMB);
  EXPECT_TRUE(comparison.memory_limit_steps.empty());
  EXPECT_TRUE(
      SnapshotComparisonToJson(comparison)["memory_limit_steps"].empty());
}

TEST(SnapshotCapacityTest, AGivenLimitIsKeptWithoutSteps) {
  RecordingBuilder built = TwoRetries(true);
  absl::StatusOr<PreparedTrace> trace = PreparedTrace::Prepare(built.trace());
  ASSERT_TRUE(trace.ok()) << trace.status();
  AllocatorSpec spec;
  spec.policy = "pytorch";
  spec.memory_limit = 120 * kMB;
  absl::StatusOr<SnapshotReplayResult> result =
      ReplaySnapshot(*trace, built.Recording(), spec, {}, /*verify=*/true);
  ASSERT_TRUE(result.ok()) << result.status();
  // The second retry is not reproduced under 120 MB throughout.
  EXPECT_EQ(result->comparison.divergences, 1);
  EXPECT_FALSE(result->comparison.memory_limit_inferred.has_value());
  EXPECT_TRUE(result->comparison.memory_limit_steps.empty());
}

}  // namespace
}  // namespace tensormem
