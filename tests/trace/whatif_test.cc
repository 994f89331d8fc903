#include "tensormem/trace/whatif.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

PreparedTrace NonMonotoneTrace() {
  absl::StatusOr<Trace> trace = ReadTrace(std::string(TENSORMEM_SOURCE_DIR) +
                                          "/tests/cli/data/non_monotone.trace");
  EXPECT_TRUE(trace.ok()) << trace.status();
  absl::StatusOr<PreparedTrace> prepared = PreparedTrace::Prepare(*trace);
  EXPECT_TRUE(prepared.ok()) << prepared.status();
  return *std::move(prepared);
}

TEST(WhatIfTest, CandidatesParseAsPolicyAndOptions) {
  absl::StatusOr<std::vector<WhatIfCandidate>> candidates =
      ParseWhatIfCandidates(
          " tf growth=false ;; pytorch config=expandable_segments:True");
  ASSERT_TRUE(candidates.ok()) << candidates.status();
  ASSERT_EQ(candidates->size(), 2u);
  EXPECT_EQ((*candidates)[0].label, "tf growth=false");
  EXPECT_EQ((*candidates)[0].spec.policy, "tf");
  EXPECT_FALSE((*candidates)[0].spec.growth);
  EXPECT_EQ((*candidates)[1].spec.policy, "pytorch");
  EXPECT_EQ((*candidates)[1].spec.config, "expandable_segments:True");
  EXPECT_EQ(DefaultWhatIfCandidates().size(), 5u);
}

TEST(WhatIfTest, AllAndTheOlderBracketSpellingRead) {
  absl::StatusOr<std::vector<WhatIfCandidate>> all =
      ParseWhatIfCandidates(" all ");
  ASSERT_TRUE(all.ok()) << all.status();
  std::vector<std::string> labels;
  for (const WhatIfCandidate& candidate : *all)
    labels.push_back(candidate.label);
  EXPECT_THAT(labels, ::testing::IsSupersetOf(
                          {"tf", "tight", "pytorch", "planned",
                           "pytorch config=expandable_segments:True"}));
  // "a,b[config]" reads as "a; b config=config" (commas inside the brackets
  // belong to the configuration).
  absl::StatusOr<std::vector<WhatIfCandidate>> older = ParseWhatIfCandidates(
      "tf,pytorch[max_split_size_mb:64,expandable_segments:True]");
  ASSERT_TRUE(older.ok()) << older.status();
  ASSERT_EQ(older->size(), 2u);
  EXPECT_EQ((*older)[1].label,
            "pytorch config=max_split_size_mb:64,expandable_segments:True");
  EXPECT_EQ((*older)[1].spec.config,
            "max_split_size_mb:64,expandable_segments:True");
  EXPECT_THAT(ParseWhatIfCandidates("pytorch[x:1").status().message(),
              HasSubstr("unbalanced brackets"));
}

TEST(WhatIfTest, BadCandidatesNameWhatIsWrong) {
  EXPECT_THAT(ParseWhatIfCandidates("tf; nosuch").status().message(),
              HasSubstr("candidate 'nosuch'"));
  EXPECT_THAT(ParseWhatIfCandidates("tf growth").status().message(),
              HasSubstr("'growth' is not key=value"));
  EXPECT_THAT(ParseWhatIfCandidates("tf colour=red").status().message(),
              HasSubstr("colour"));
  EXPECT_FALSE(ParseWhatIfCandidates(" ; ").ok());
}

TEST(WhatIfTest, ComparesLimitsAndFindsWhereEachRunsOut) {
  const PreparedTrace trace = NonMonotoneTrace();
  absl::StatusOr<std::vector<WhatIfCandidate>> candidates =
      ParseWhatIfCandidates(
          "tf growth=false; tf growth=false "
          "memory_limit=1M");
  ASSERT_TRUE(candidates.ok()) << candidates.status();
  // 6912 B: tf without growth fails there (docs of non_monotone.trace).
  absl::StatusOr<WhatIfResult> result = RunWhatIf(
      trace, *candidates,
      {.device_memory = 6912, .measure_speed = false, .timeline_samples = 4});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->peak_live_bytes, 5376u);
  ASSERT_EQ(result->rows.size(), 2u);
  const WhatIfRow& row = result->rows[0];
  ASSERT_TRUE(row.min_limit.has_value());
  EXPECT_EQ(row.min_limit->limit_bytes, 5632u);
  EXPECT_EQ(row.min_limit->method, MinLimitMethod::kExactScan);
  // Without growth the pool is the whole limit from the first allocation.
  EXPECT_EQ(result->rows[1].metrics.peak_pool_bytes, 1u << 20);
  EXPECT_NEAR(result->rows[1].fragmentation_at_peak, 1.0, 0.01);
  ASSERT_TRUE(row.device_memory_checked);
  ASSERT_TRUE(row.out_of_memory.has_value());
  EXPECT_GT(row.out_of_memory->event, 0);
  EXPECT_GT(row.out_of_memory->bytes, 0u);
  EXPECT_FALSE(row.out_of_memory->explanation.empty());
  EXPECT_EQ(result->timeline_events.size(), 4u);
  EXPECT_EQ(row.reserved_timeline.size(), 4u);
  const nlohmann::json json = WhatIfToJson(*result);
  EXPECT_EQ(json["candidates"][0]["fits_device_memory"], false);
  EXPECT_EQ(json["candidates"][0]["min_limit_method"], "exact scan");
  EXPECT_EQ(json["device_memory_bytes"], 6912);
}

TEST(WhatIfTest, FitsWhenTheDeviceIsLargeEnough) {
  const PreparedTrace trace = NonMonotoneTrace();
  absl::StatusOr<WhatIfResult> result = RunWhatIf(
      trace, *ParseWhatIfCandidates("tf growth=false"),
      {.device_memory = 5632, .min_limit = false, .measure_speed = false});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->rows[0].device_memory_checked);
  EXPECT_FALSE(result->rows[0].out_of_memory.has_value());
  EXPECT_FALSE(result->rows[0].min_limit.has_value());
}

}  // namespace
}  // namespace tensormem
