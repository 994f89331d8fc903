#include "tensormem/report/replay_html.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/trace/replay_allocator.h"

namespace tensormem {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// A 4 KiB BFC pool without growth filled with four 1 KiB blocks; freeing the
// first and third leaves 2 KiB free in two holes, so 2 KiB cannot fit.
ReplayResult FragmentedReplay() {
  Trace trace;
  for (uint64_t id = 1; id <= 4; ++id)
    trace.events.push_back(TraceEvent::Alloc(id, 1024));
  trace.events.push_back(TraceEvent::Free(1));
  trace.events.push_back(TraceEvent::Free(3));
  trace.events.push_back(TraceEvent::Alloc(5, 2048));
  absl::StatusOr<PreparedTrace> prepared = PreparedTrace::Prepare(trace);
  EXPECT_TRUE(prepared.ok());
  AllocatorSpec config;
  config.policy = "tf";
  config.growth = false;
  config.memory_limit = 4096;
  absl::StatusOr<ReplayTarget> target = CreateReplayTarget(config);
  EXPECT_TRUE(target.ok()) << target.status();
  absl::StatusOr<ReplayResult> result =
      Replay(*prepared, *target,
             {.record_placement = true, .max_timeline_samples = 10});
  EXPECT_TRUE(result.ok()) << result.status();
  return *std::move(result);
}

TEST(ReplayHtmlTest, FailureShowsTheFreeChunksAndWhyNoneFitted) {
  const ReplayResult result = FragmentedReplay();
  ASSERT_EQ(result.failures.size(), 1u);
  const FailedAllocation& failure = result.failures[0];
  EXPECT_EQ(failure.event, 6);
  EXPECT_EQ(failure.live_bytes, 2048u);
  EXPECT_EQ(failure.pool_bytes, 4096u);
  EXPECT_EQ(failure.free_bytes, 2048u);
  EXPECT_THAT(failure.largest_free_chunks,
              ElementsAre(Pair(0, 1024), Pair(2048, 1024)));
  EXPECT_FALSE(failure.explanation.empty());  // BFC's own report
  EXPECT_THAT(ExplainFailure(failure), HasSubstr("too fragmented for 2.00KiB"));
}

TEST(ReplayHtmlTest, PageHoldsSummaryTimelinePlacementAndFailure) {
  const ReplayResult result = FragmentedReplay();
  ReplayReportExtras extras;
  extras.min_limit = MinimumLimit{.limit_bytes = 6144, .ratio = 1.5};
  const std::string html =
      RenderReplayHtml(result, "fragmented", "bfc(test)", extras);
  EXPECT_THAT(html, HasSubstr("<td>peak live</td><td>4.00KiB (4096 B)</td>"));
  EXPECT_THAT(html,
              HasSubstr("<td>minimum limit / peak live</td><td>1.5000</td>"));
  EXPECT_THAT(html, HasSubstr("class=\"tm-timeline-chart\""));
  EXPECT_THAT(html, HasSubstr("\"peak_x\":3"));
  EXPECT_THAT(html, HasSubstr("class=\"tm-placement-chart\""));
  EXPECT_THAT(html, HasSubstr("\"offset\":[0,1024,2048,3072]"));
  EXPECT_THAT(html, HasSubstr("Failed allocation at event 6: id 5, 2.00KiB"));
  EXPECT_THAT(html, HasSubstr("short by 1.00KiB"));
}

}  // namespace
}  // namespace tensormem
