// `tensormem replay`: runs a trace through an allocator and reports the
// metrics of docs/design.md §4 (docs/replay.md).
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/replay_flags.h"
#include "nlohmann/json.hpp"
#include "tensormem/core/units.h"
#include "tensormem/trace/replay.h"
#include "tensormem/trace/stream_pools.h"

namespace tensormem::cli {
namespace {

struct ReplayFlags {
  std::string trace;
  AllocatorFlags allocator;
  bool min_limit = false;
  bool offsets = false;
  bool dump = false;
  bool stream_pools = false;
  bool json = false;
};

// Per-stream pools from the trace's `stream=` keys (docs/cuda.md).
StreamPoolsResult SimulateStreams(const std::string& path,
                                  const AllocatorSpec& config) {
  const Trace trace = ReadInput("replay", path, config.device);
  absl::StatusOr<StreamPoolsResult> result = SimulateStreamPools(
      trace, [&config] { return CreateReplayTarget(config); });
  if (!result.ok()) {
    Fail("replay", kBadInput,
         path + ": " + std::string(result.status().message()));
  }
  return *std::move(result);
}

void PrintStreamPools(const StreamPoolsResult& pools) {
  std::printf("\nper-stream pools (%zu streams)\n", pools.streams.size());
  std::printf("%-22s %s\n", "shared peak pool",
              HumanBytes(pools.shared_peak_pool_bytes).c_str());
  std::printf("%-22s %s\n", "per-stream peak pool",
              HumanBytes(pools.per_stream_peak_pool_bytes).c_str());
  std::printf("%-22s %s\n", "peak stranded",
              HumanBytes(pools.peak_stranded_bytes).c_str());
  std::printf("%-22s %lld\n", "avoidable growths",
              static_cast<long long>(pools.avoidable_growths));
}

nlohmann::json OffsetsJson(const std::vector<AllocationRecord>& records) {
  nlohmann::json rows = nlohmann::json::array();
  for (const AllocationRecord& record : records) {
    rows.push_back(
        {{"id", record.id},
         {"event", record.event},
         {"bytes", record.bytes},
         {"offset",
          record.offset ? nlohmann::json(*record.offset) : nlohmann::json()},
         {"allocated", record.allocated ? nlohmann::json(*record.allocated)
                                        : nlohmann::json()}});
  }
  return rows;
}

void PrintTable(const ReplayMetrics& m, const std::string& allocator,
                const std::optional<MinimumLimit>& min_limit) {
  auto bytes = [](uint64_t value) {
    return absl::StrFormat("%s (%d B)", HumanBytes(value), value);
  };
  std::printf("%-22s %s\n", "allocator", allocator.c_str());
  std::printf("%-22s %lld\n", "events", static_cast<long long>(m.events));
  std::printf("%-22s %lld\n", "allocs", static_cast<long long>(m.allocs));
  std::printf("%-22s %lld\n", "frees", static_cast<long long>(m.frees));
  std::printf("%-22s %lld\n", "failed allocs",
              static_cast<long long>(m.failed_allocs));
  std::printf("%-22s %s\n", "peak live", bytes(m.peak_live_bytes).c_str());
  std::printf("%-22s %s\n", "peak in use", bytes(m.peak_in_use_bytes).c_str());
  std::printf("%-22s %s\n", "peak pool", bytes(m.peak_pool_bytes).c_str());
  std::printf("%-22s %.4f\n", "fragmentation", m.fragmentation);
  std::printf("%-22s %.6f\n", "seconds", m.seconds);
  std::printf("%-22s %.1f\n", "ns per op", m.ns_per_op);
  if (min_limit) {
    std::printf("%-22s %s\n", "min limit",
                bytes(min_limit->limit_bytes).c_str());
    std::printf("%-22s %.4f\n", "min limit / peak live", min_limit->ratio);
    std::printf(
        "%-22s %s (%d replays; bisection alone: %s)\n", "min limit found by",
        std::string(MinLimitMethodName(min_limit->method)).c_str(),
        min_limit->replays, bytes(min_limit->bisection_limit_bytes).c_str());
  }
}

// What one `replay` measured, for either output.
struct ReplayOutcome {
  ReplayResult result;
  std::optional<MinimumLimit> min_limit;
  std::optional<StreamPoolsResult> stream_pools;
  std::string description;
};

void PrintJson(const ReplayFlags& flags, const ReplayOutcome& outcome,
               const ReplayTarget& target) {
  nlohmann::json json = ReplayMetricsToJson(outcome.result.metrics);
  json["trace"] = flags.trace;
  json["allocator_config"] = outcome.description;
  if (outcome.min_limit) json.update(MinimumLimitToJson(*outcome.min_limit));
  if (flags.offsets) json["offsets"] = OffsetsJson(outcome.result.allocations);
  if (outcome.stream_pools) {
    json["stream_pools"] = StreamPoolsToJson(*outcome.stream_pools);
  }
  if (flags.dump) json["dump"] = target.dump().ToJson();
  std::printf("%s\n", json.dump(2).c_str());
}

void PrintOffsets(const std::vector<AllocationRecord>& records) {
  std::printf("\n%8s %20s %14s %18s %14s\n", "event", "id", "bytes", "offset",
              "allocated");
  for (const AllocationRecord& record : records) {
    std::printf(
        "%8lld %20llu %14llu %18s %14s\n", static_cast<long long>(record.event),
        static_cast<unsigned long long>(record.id),
        static_cast<unsigned long long>(record.bytes),
        record.offset ? std::to_string(*record.offset).c_str() : "failed",
        record.allocated ? std::to_string(*record.allocated).c_str() : "-");
  }
}

void PrintText(const ReplayFlags& flags, const ReplayOutcome& outcome,
               const ReplayTarget& target) {
  PrintTable(outcome.result.metrics, outcome.description, outcome.min_limit);
  if (outcome.stream_pools) PrintStreamPools(*outcome.stream_pools);
  if (flags.offsets) PrintOffsets(outcome.result.allocations);
  if (flags.dump) std::printf("\n%s", target.dump().ToText().c_str());
}

void Run(const ReplayFlags& flags) {
  constexpr std::string_view kCommand = "replay";
  absl::StatusOr<AllocatorSpec> config = ToAllocatorSpec(flags.allocator);
  if (!config.ok()) Fail(kCommand, kBadFlags, config.status().message());
  const PreparedTrace trace = LoadTrace(kCommand, flags.trace, config->device);

  const ReplayMetrics timing = MeasureSpeed(kCommand, trace, *config);

  absl::StatusOr<ReplayTarget> target = CreateReplayTarget(*config);
  if (!target.ok()) Fail(kCommand, target.status());
  if (flags.dump && !target->dump) {
    Fail(kCommand, kBadFlags,
         "--dump: allocator '" + config->kind + "' keeps no memory map");
  }
  absl::StatusOr<ReplayResult> result =
      Replay(trace, *target,
             {.record_offsets = flags.offsets, .max_failure_reports = 0});
  if (!result.ok()) {
    Fail(kCommand, kBadInput,
         flags.trace + ": " + std::string(result.status().message()));
  }
  ReplayOutcome outcome{*std::move(result), std::nullopt, std::nullopt,
                        DescribeAllocator(*config)};
  outcome.result.metrics.seconds = timing.seconds;
  outcome.result.metrics.ns_per_op = timing.ns_per_op;
  if (flags.min_limit) {
    absl::StatusOr<MinimumLimit> found = MinimumLimitFor(trace, *config);
    if (!found.ok()) Fail(kCommand, found.status());
    outcome.min_limit = *found;
  }
  if (flags.stream_pools) {
    outcome.stream_pools = SimulateStreams(flags.trace, *config);
  }
  if (flags.json) {
    PrintJson(flags, outcome, *target);
  } else {
    PrintText(flags, outcome, *target);
  }
}

}  // namespace

void AddReplayCommand(CLI::App& app) {
  auto flags = std::make_shared<ReplayFlags>();
  CLI::App* command = app.add_subcommand(
      "replay",
      "Run a trace through an allocator and report peak live/in-use/pool "
      "bytes, "
      "fragmentation and speed.\n"
      "Example: tensormem replay data/models/resnet50.infer_b8.trace.gz "
      "--no-growth "
      "--memory-limit 256M --min-limit --json");
  command
      ->add_option("trace", flags->trace,
                   "trace (.trace[.gz]), PyTorch snapshot (.pickle), RMM log "
                   "or buffer set (.csv)")
      ->required()
      ->check(CLI::ExistingFile);
  AddAllocatorFlags(*command, flags->allocator);
  command->add_flag(
      "--min-limit", flags->min_limit,
      "also find the smallest limit without growth at which nothing fails "
      "(256 B precision: bisection, then an exact scan below its answer when "
      "affordable; the output says which)");
  command->add_flag(
      "--offsets", flags->offsets,
      "list every allocation: id, offset (address - base), allocated bytes");
  command->add_flag("--dump", flags->dump,
                    "print the final memory map (regions, chunks, bins)");
  command->add_flag("--stream-pools", flags->stream_pools,
                    "also replay with one pool per stream= and report the "
                    "bytes stranded in other streams' pools");
  command->add_flag("--json", flags->json, "print one JSON object");
  command->callback([flags] { Run(*flags); });
}

}  // namespace tensormem::cli
