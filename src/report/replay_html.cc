#include "tensormem/report/replay_html.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tensormem/core/units.h"
#include "tensormem/report/html_page.h"
#include "tensormem/report/timeline_chart.h"

namespace tensormem {
namespace {

std::string Bytes(uint64_t bytes) {
  return absl::StrCat(HumanBytes(bytes), " (", bytes, " B)");
}

std::vector<std::vector<std::string>> SummaryRows(
    const ReplayResult& result, std::string_view allocator_description,
    const ReplayReportExtras& extras) {
  const ReplayMetrics& m = result.metrics;
  std::vector<std::vector<std::string>> rows = {
      {"allocator", std::string(allocator_description)},
      {"events", absl::StrCat(m.events)},
      {"allocs", absl::StrCat(m.allocs)},
      {"frees", absl::StrCat(m.frees)},
      {"failed allocs", absl::StrCat(m.failed_allocs)},
      {"peak live", Bytes(m.peak_live_bytes)},
      {"peak in use", Bytes(m.peak_in_use_bytes)},
      {"peak pool", Bytes(m.peak_pool_bytes)},
      {"fragmentation (peak pool / peak live)",
       absl::StrFormat("%.4f", m.fragmentation)}};
  if (m.seconds > 0)
    rows.push_back({"ns per op", absl::StrFormat("%.1f", m.ns_per_op)});
  if (extras.min_limit) {
    rows.push_back(
        {"minimum limit without growth", Bytes(extras.min_limit->limit_bytes)});
    rows.push_back({"minimum limit / peak live",
                    absl::StrFormat("%.4f", extras.min_limit->ratio)});
    rows.push_back({"minimum limit found by",
                    std::string(MinLimitMethodName(extras.min_limit->method))});
  }
  return rows;
}

TimelineChartData Timeline(const ReplayResult& result) {
  TimelineChartData chart;
  chart.x_label = "event";
  TimelineSeries live{"live", {}}, in_use{"in use", {}}, pool{"pool", {}};
  for (const TimelineSample& sample : result.timeline) {
    chart.x.push_back(sample.event);
    live.values.push_back(sample.live_bytes);
    in_use.values.push_back(sample.in_use_bytes);
    pool.values.push_back(sample.pool_bytes);
  }
  chart.series = {std::move(live), std::move(in_use), std::move(pool)};
  if (result.peak_live_event >= 0) chart.peak_x = result.peak_live_event;
  chart.peak_value = result.metrics.peak_live_bytes;
  return chart;
}

void AddFailure(const FailedAllocation& failure, HtmlPage& page) {
  page.AddHeading(absl::StrFormat("Failed allocation at event %d: id %d, %s",
                                  failure.event, failure.id,
                                  HumanBytes(failure.bytes)));
  page.AddParagraph(ExplainFailure(failure));
  page.AddTable({"at that moment", "bytes"},
                {{"live", Bytes(failure.live_bytes)},
                 {"pool", Bytes(failure.pool_bytes)},
                 {"free inside the pool", Bytes(failure.free_bytes)}},
                "tm-table tm-failure");
  if (!failure.largest_free_chunks.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& [offset, size] : failure.largest_free_chunks) {
      rows.push_back(
          {absl::StrCat(offset), Bytes(size),
           size >= failure.bytes
               ? "large enough, but not usable (alignment or rounding)"
               : absl::StrCat("short by ", HumanBytes(failure.bytes - size))});
    }
    page.AddTable({"free chunk offset", "size", "why not"}, rows,
                  "tm-table tm-free-chunks");
  }
  if (!failure.explanation.empty()) page.AddPreformatted(failure.explanation);
}

}  // namespace

std::string ExplainFailure(const FailedAllocation& failure) {
  const std::string request = HumanBytes(failure.bytes);
  if (failure.largest_free_chunks.empty()) {
    return absl::StrFormat(
        "No free chunk inside the pool (%s live, pool %s) and the pool could "
        "not grow to fit "
        "%s within the memory limit.",
        HumanBytes(failure.live_bytes), HumanBytes(failure.pool_bytes),
        request);
  }
  const uint64_t largest = failure.largest_free_chunks.front().second;
  if (failure.free_bytes >= failure.bytes) {
    return absl::StrFormat(
        "%s free inside the pool, but the largest free chunk is %s: too "
        "fragmented for %s, and "
        "the pool could not grow within the memory limit.",
        HumanBytes(failure.free_bytes), HumanBytes(largest), request);
  }
  return absl::StrFormat(
      "Only %s free inside the pool (largest chunk %s) for a request of %s, "
      "and the pool could "
      "not grow within the memory limit.",
      HumanBytes(failure.free_bytes), HumanBytes(largest), request);
}

std::string RenderReplayHtml(const ReplayResult& result, std::string_view title,
                             std::string_view allocator_description,
                             const ReplayReportExtras& extras) {
  HtmlPage page(title);
  page.AddHeading("Summary");
  page.AddTable({"metric", "value"},
                SummaryRows(result, allocator_description, extras),
                "tm-table tm-summary");
  page.AddHeading("Memory timeline");
  page.AddTimelineChart(Timeline(result));
  if (!result.placement.buffers.empty()) {
    page.AddHeading("Placement (offset from the pool's base over events)");
    page.AddPlacementChart(result.placement, "event");
  }
  if (result.metrics.failed_allocs > 0) {
    page.AddHeading(
        absl::StrFormat("%d failed allocations", result.metrics.failed_allocs));
    if (result.failures.empty())
      page.AddParagraph("All were recorded as failed in the trace.");
    for (const FailedAllocation& failure : result.failures)
      AddFailure(failure, page);
  }
  return page.Render();
}

}  // namespace tensormem
