#include "tensormem/alloc/memory_dump.h"
#include "tensormem/trace/replay.h"

namespace tensormem {

void AddLoopStatsJson(const AllocatorStats& stats, nlohmann::json& json) {
  if (stats.steady_peak_pool_bytes) {
    json["planned_iterations"] = stats.planned_iterations;
    json["steady_peak_pool_bytes"] = *stats.steady_peak_pool_bytes;
    json["steady_peak_bytes_requested"] =
        stats.steady_peak_bytes_requested.value_or(0);
  }
  if (stats.loop_plans) {
    json["loop_plans"] = {{"found", stats.loop_plans->found},
                          {"taken_over", stats.loop_plans->taken_over},
                          {"without_room", stats.loop_plans->without_room},
                          {"not_repeated", stats.loop_plans->not_repeated},
                          {"waiting", stats.loop_plans->waiting}};
  }
}

nlohmann::json AllocatorStatsToJson(const AllocatorStats& stats) {
  nlohmann::json json = AllocatorStatsCountersToJson(stats);
  AddLoopStatsJson(stats, json);
  // The same state as PyTorch's torch.cuda.memory_stats() names it.
  json["pytorch"] = {{"allocated_bytes", stats.bytes_in_use},
                     {"allocated_bytes_peak", stats.peak_bytes_in_use},
                     {"reserved_bytes", stats.pool_bytes},
                     {"reserved_bytes_peak", stats.peak_pool_bytes},
                     {"active_bytes", stats.bytes_in_use},
                     {"inactive_split_bytes", stats.inactive_split_bytes},
                     {"requested_bytes", stats.bytes_requested},
                     {"segment", stats.num_regions},
                     {"num_ooms", stats.num_ooms},
                     {"num_alloc_retries", stats.num_alloc_retries}};
  return json;
}

std::string ReplayMetrics::NoSteadyStateReason() const {
  if (steady_ratio() || !stats || !stats->loop_plans) return "";
  const AllocatorStats::LoopPlans& plans = *stats->loop_plans;
  if (plans.without_room > 0) return "no plan: no room";
  if (plans.waiting > 0) return "no plan yet";
  if (plans.taken_over == 0) return "no loop found";
  return "";
}

nlohmann::json ReplayMetricsToJson(const ReplayMetrics& metrics) {
  nlohmann::json json = {
      {"allocator", metrics.allocator},
      {"events", metrics.events},
      {"allocs", metrics.allocs},
      {"frees", metrics.frees},
      {"failed_allocs", metrics.failed_allocs},
      {"recorded_failures", metrics.recorded_failures},
      {"skipped_frees", metrics.skipped_frees},
      {"peak_live_bytes", metrics.peak_live_bytes},
      {"peak_in_use_bytes", metrics.peak_in_use_bytes},
      {"peak_pool_bytes", metrics.peak_pool_bytes},
      {"fragmentation", metrics.fragmentation},
      {"seconds", metrics.seconds},
      {"ns_per_op", metrics.ns_per_op},
      {"stats", metrics.stats ? AllocatorStatsToJson(*metrics.stats)
                              : nlohmann::json()}};
  if (metrics.steady_pool_bytes && metrics.steady_live_bytes) {
    json["planned_iterations"] = metrics.planned_iterations;
    json["steady_pool_bytes"] = *metrics.steady_pool_bytes;
    json["steady_live_bytes"] = *metrics.steady_live_bytes;
    json["steady_ratio"] = metrics.steady_ratio().value_or(0.0);
  }
  return json;
}

}  // namespace tensormem
