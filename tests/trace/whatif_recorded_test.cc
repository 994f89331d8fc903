// What-if on PyTorch snapshots: the recorded row, the candidate with the
// recording's settings replayed as the GPU ran it, and the recommendation.
// The snapshots are the H200 recordings committed under bench/results/gpu/.
#include <algorithm>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/report/whatif_text.h"
#include "tensormem/trace/importers.h"
#include "tensormem/trace/trace_io.h"
#include "tensormem/trace/whatif.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

// Neither the limit search nor timing: the rows and advice only.
WhatIfOptions Quick() {
  WhatIfOptions options;
  options.min_limit = false;
  options.measure_speed = false;
  return options;
}

struct Snapshot {
  PytorchImport read;
  PreparedTrace trace;
};

Snapshot ReadH200Snapshot(const std::string& name) {
  absl::StatusOr<PytorchImport> read = ReadPytorchSnapshot(
      std::string(TENSORMEM_SOURCE_DIR) +
      "/bench/results/gpu/2026-11-28-h200-2/snapshots/" + name);
  EXPECT_TRUE(read.ok()) << read.status();
  absl::StatusOr<PreparedTrace> trace = PreparedTrace::Prepare(read->trace);
  EXPECT_TRUE(trace.ok()) << trace.status();
  return {*std::move(read), *std::move(trace)};
}

WhatIfResult RunOn(const Snapshot& snapshot, std::string_view candidates) {
  WhatIfOptions options = Quick();
  options.recording = &snapshot.read.recording;
  absl::StatusOr<WhatIfResult> result =
      RunWhatIf(snapshot.trace, *ParseWhatIfCandidates(candidates), options);
  EXPECT_TRUE(result.ok()) << result.status();
  return *std::move(result);
}

int64_t Peak(const WhatIfResult& result, size_t row) {
  return static_cast<int64_t>(result.rows[row].metrics.peak_pool_bytes);
}

TEST(WhatIfRecordedTest, TheDefaultRowIsCheckedAgainstTheRecording) {
  const Snapshot snapshot = ReadH200Snapshot("default.pickle.gz");
  const WhatIfResult result =
      RunOn(snapshot, std::string(kDefaultWhatIfCandidates));
  ASSERT_TRUE(result.recorded.has_value());
  const WhatIfRecorded& recorded = *result.recorded;
  ASSERT_EQ(result.rows.size(), 5u);  // "pytorch" has the recorded settings
  EXPECT_EQ(recorded.row, 1u);
  EXPECT_EQ(recorded.config, "");
  EXPECT_EQ(recorded.peak_reserved_bytes,
            snapshot.read.recording.peak_reserved_bytes);
  EXPECT_EQ(recorded.segments, snapshot.read.recording.segments_added);
  EXPECT_TRUE(recorded.as_run_error.empty()) << recorded.as_run_error;
  EXPECT_EQ(recorded.as_run.divergences, 0);
  EXPECT_EQ(recorded.as_run_peak_reserved_bytes, recorded.peak_reserved_bytes);
  EXPECT_TRUE(recorded.matches);
  EXPECT_EQ(recorded.reserved_at_start_bytes, 0u);  // it began cold
  // Its row is that replay; the others start cold at simulated addresses.
  EXPECT_TRUE(result.rows[1].replayed_as_run);
  EXPECT_EQ(result.rows[1].metrics.peak_pool_bytes,
            recorded.peak_reserved_bytes);
  EXPECT_FALSE(result.rows[0].replayed_as_run);

  const nlohmann::json json = WhatIfToJson(result);
  EXPECT_EQ(json["recorded"]["matches"], true);
  EXPECT_EQ(json["recorded"]["candidate"], "pytorch");
  EXPECT_EQ(json["recorded"]["as_run"]["divergences"], 0);
  const std::string text = RenderWhatIfText(result);
  EXPECT_THAT(text, HasSubstr("recorded (PyTorch on the GPU)"));
  EXPECT_THAT(text, HasSubstr("matches the recording"));
  EXPECT_THAT(text, HasSubstr("pytorch (as run)"));
}

TEST(WhatIfRecordedTest, RecordedSettingsJoinTheCandidatesWhenMissing) {
  const Snapshot snapshot = ReadH200Snapshot("roundup_4.pickle.gz");
  const WhatIfResult result = RunOn(snapshot, "tf; pytorch; tight");
  ASSERT_EQ(result.rows.size(), 4u);
  EXPECT_EQ(result.rows[1].label, "pytorch config=roundup_power2_divisions:4");
  EXPECT_EQ(result.rows[1].spec.config, "roundup_power2_divisions:4");
  EXPECT_EQ(result.rows[2].label, "pytorch");
  ASSERT_TRUE(result.recorded.has_value());
  EXPECT_EQ(result.recorded->row, 1u);
  EXPECT_TRUE(result.recorded->matches);

  // The recorded settings already among the candidates: none is added.
  const Snapshot expandable = ReadH200Snapshot("expandable.pickle.gz");
  const WhatIfResult given =
      RunOn(expandable, "pytorch; pytorch config=expandable_segments:True");
  ASSERT_EQ(given.rows.size(), 2u);
  EXPECT_EQ(given.recorded->row, 1u);
  EXPECT_TRUE(given.recorded->matches);
}

TEST(WhatIfRecordedTest, AMemoryFractionBoundsEveryCandidate) {
  // garbage_collection_threshold acts only under a memory fraction; the
  // replay infers the limit it ran under, and every candidate gets it.
  const Snapshot snapshot = ReadH200Snapshot("gc_0.6.pickle.gz");
  const WhatIfResult result = RunOn(snapshot, "pytorch; tight");
  ASSERT_TRUE(result.recorded.has_value());
  const std::optional<uint64_t> limit =
      result.recorded->as_run.memory_limit_inferred;
  ASSERT_TRUE(limit.has_value());
  for (const WhatIfRow& row : result.rows) {
    EXPECT_EQ(row.spec.memory_limit, limit) << row.label;
    EXPECT_LE(row.metrics.peak_pool_bytes, *limit) << row.label;
  }
  EXPECT_TRUE(result.recorded->matches);
  EXPECT_THAT(RenderWhatIfText(result), HasSubstr("every candidate"));
}

TEST(WhatIfRecommendationTest, SavingsAreAgainstTheRecordedSettings) {
  const Snapshot snapshot = ReadH200Snapshot("max_split_128.pickle.gz");
  const WhatIfResult result =
      RunOn(snapshot, std::string(kDefaultWhatIfCandidates));
  ASSERT_TRUE(result.recommendation.has_value());
  const WhatIfRecommendation& advice = *result.recommendation;
  EXPECT_EQ(advice.baseline_row, result.recorded->row);
  const int64_t baseline = Peak(result, advice.baseline_row);
  // The PyTorch setting reserving least, found independently.
  size_t least = advice.baseline_row;
  for (size_t i = 0; i < result.rows.size(); ++i) {
    if (result.rows[i].spec.policy == "pytorch" &&
        Peak(result, i) < Peak(result, least))
      least = i;
  }
  ASSERT_NE(least, advice.baseline_row) << "max_split_size_mb:128 is costly";
  ASSERT_TRUE(advice.best_pytorch.has_value());
  EXPECT_EQ(advice.best_pytorch->row, least);
  EXPECT_EQ(advice.best_pytorch->saving_bytes, baseline - Peak(result, least));
  EXPECT_NEAR(advice.best_pytorch->saving_percent,
              100.0 * (baseline - Peak(result, least)) / baseline, 1e-9);
  ASSERT_TRUE(advice.tight.has_value());
  EXPECT_EQ(result.rows[advice.tight->row].label, "tight");
  EXPECT_EQ(advice.tight->saving_bytes,
            baseline - Peak(result, advice.tight->row));
  ASSERT_EQ(advice.lines.size(), 2u);
  EXPECT_THAT(advice.lines[0], HasSubstr("PYTORCH_CUDA_ALLOC_CONF=" +
                                         result.rows[least].spec.config));
  EXPECT_THAT(advice.lines[0], HasSubstr("max_split_size_mb:128"));
  EXPECT_THAT(advice.lines[1], HasSubstr("CUDA plug-in"));
  const nlohmann::json json = WhatIfToJson(result);
  EXPECT_EQ(json["recommendation"]["best_pytorch"]["saving_bytes"],
            advice.best_pytorch->saving_bytes);
  EXPECT_EQ(json["recommendation"]["baseline"]["candidate"],
            result.rows[advice.baseline_row].label);
}

PreparedTrace ResNetTrace() {
  absl::StatusOr<Trace> trace =
      ReadTrace(std::string(TENSORMEM_SOURCE_DIR) +
                "/data/models/resnet50.train_b8.trace.gz");
  EXPECT_TRUE(trace.ok()) << trace.status();
  absl::StatusOr<PreparedTrace> prepared = PreparedTrace::Prepare(*trace);
  EXPECT_TRUE(prepared.ok()) << prepared.status();
  return *std::move(prepared);
}

TEST(WhatIfRecommendationTest, WithoutARecordingTheDefaultsAreTheBaseline) {
  const PreparedTrace trace = ResNetTrace();
  absl::StatusOr<WhatIfResult> result =
      RunWhatIf(trace,
                *ParseWhatIfCandidates(
                    "pytorch config=max_split_size_mb:512; pytorch; tight"),
                Quick());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->recorded.has_value());
  ASSERT_TRUE(result->recommendation.has_value());
  EXPECT_EQ(result->recommendation->baseline_row, 1u);
  EXPECT_THAT(result->recommendation->lines[0], HasSubstr("the baseline"));

  // No pytorch candidate: nothing to recommend against.
  absl::StatusOr<WhatIfResult> none =
      RunWhatIf(trace, *ParseWhatIfCandidates("tf; tight"), Quick());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->recommendation.has_value());
  EXPECT_FALSE(WhatIfToJson(*none).contains("recommendation"));
}

TEST(WhatIfRecommendationTest, CandidatesThatRunOutOfMemoryArePassedOver) {
  const PreparedTrace trace = ResNetTrace();
  WhatIfOptions options = Quick();
  options.device_memory = 1 << 20;  // far below the peak of live bytes
  absl::StatusOr<WhatIfResult> result =
      RunWhatIf(trace,
                *ParseWhatIfCandidates(
                    "pytorch; pytorch config=max_split_size_mb:512; tight"),
                options);
  ASSERT_TRUE(result.ok()) << result.status();
  const WhatIfRecommendation& advice = *result->recommendation;
  EXPECT_FALSE(advice.best_pytorch.has_value());
  EXPECT_FALSE(advice.tight.has_value());
  EXPECT_THAT(advice.lines[0], HasSubstr("runs out of memory"));
  EXPECT_THAT(advice.lines.back(), HasSubstr("tight runs out"));
}

}  // namespace
}  // namespace tensormem
