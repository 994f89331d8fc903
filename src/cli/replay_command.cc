// `tensormem replay`: runs a trace through an allocator and reports the
// metrics of docs/design.md §4 (docs/replay.md).
#include <algorithm>
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
#include "tensormem/trace/snapshot_replay.h"
#include "tensormem/trace/stream_pools.h"
#include "tensormem/trace/trace_input.h"

namespace tensormem::cli {
namespace {

struct ReplayFlags {
  std::string trace;
  AllocatorFlags allocator;
  bool min_limit = false;
  bool list_blocks = false;
  std::optional<int> snapshot_device;  // unset: the allocator's --device
  bool dump = false;
  bool stream_pools = false;
  bool verify = false;
  bool json = false;
};

// Which device's events a PyTorch snapshot gives: --snapshot-device, else the
// allocator's device, so that device N's events replay on device N.
int SnapshotDevice(const ReplayFlags& flags, const AllocatorSpec& spec) {
  return flags.snapshot_device.value_or(spec.device);
}

// Per-stream pools from the trace's `stream=` keys (docs/cuda.md).
StreamPoolsResult SimulateStreams(const std::string& path, int device,
                                  const AllocatorSpec& config) {
  const Trace trace = ReadInput("replay", path, device);
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
  if (m.steady_pool_bytes && m.steady_live_bytes) {
    std::printf("%-22s %lld\n", "planned iterations",
                static_cast<long long>(m.planned_iterations));
    std::printf("%-22s %s\n", "steady pool",
                bytes(*m.steady_pool_bytes).c_str());
    std::printf("%-22s %s\n", "steady live",
                bytes(*m.steady_live_bytes).c_str());
    std::printf("%-22s %.4f\n", "steady pool / live",
                m.steady_ratio().value_or(0.0));
  }
  if (m.stats && m.stats->loop_plans) {
    const AllocatorStats::LoopPlans& plans = *m.stats->loop_plans;
    std::printf(
        "%-22s %lld found: %lld took over, %lld without room, %lld not "
        "repeated, %lld waiting\n",
        "loop plans", static_cast<long long>(plans.found),
        static_cast<long long>(plans.taken_over),
        static_cast<long long>(plans.without_room),
        static_cast<long long>(plans.not_repeated),
        static_cast<long long>(plans.waiting));
  }
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
  std::optional<SnapshotComparison> snapshot;  // a snapshot replayed as run
};

void PrintJson(const ReplayFlags& flags, const ReplayOutcome& outcome,
               const ReplayTarget& target) {
  nlohmann::json json = ReplayMetricsToJson(outcome.result.metrics);
  json["trace"] = flags.trace;
  json["allocator_config"] = outcome.description;
  if (outcome.min_limit) json.update(MinimumLimitToJson(*outcome.min_limit));
  if (flags.list_blocks)
    json["offsets"] = OffsetsJson(outcome.result.allocations);
  if (outcome.stream_pools) {
    json["stream_pools"] = StreamPoolsToJson(*outcome.stream_pools);
  }
  if (flags.dump) json["dump"] = target.dump().ToJson();
  if (outcome.snapshot)
    json["snapshot"] = SnapshotComparisonToJson(*outcome.snapshot);
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

// A capacity that changed over the recording, one line a step, e.g.
// "capacity               24004526080 from event 44".
void PrintCapacitySteps(const SnapshotComparison& snapshot) {
  for (const SnapshotCapacityStep& step : snapshot.memory_limit_steps) {
    std::printf("%-22s %llu from event %lld\n", "capacity",
                static_cast<unsigned long long>(step.bytes),
                static_cast<long long>(step.event));
  }
}

void PrintSnapshot(const SnapshotComparison& snapshot,
                   const ReplayMetrics& metrics) {
  std::printf("\nrecorded by PyTorch (config \"%s\")\n",
              snapshot.config.c_str());
  std::printf(
      "%-22s %llu (replayed %llu: %s)\n", "peak reserved",
      static_cast<unsigned long long>(snapshot.recorded_peak_reserved_bytes),
      static_cast<unsigned long long>(metrics.peak_pool_bytes),
      snapshot.recorded_peak_reserved_bytes == metrics.peak_pool_bytes
          ? "exact"
          : "differs");
  std::printf("%-22s %lld (replayed %lld)\n", "segments",
              static_cast<long long>(snapshot.recorded_segments),
              static_cast<long long>(snapshot.replayed_segments));
  std::printf("%-22s %lld (replayed %lld)\n", "alloc retries",
              static_cast<long long>(snapshot.recorded_alloc_retries),
              static_cast<long long>(snapshot.replayed_alloc_retries));
  PrintCapacitySteps(snapshot);
  if (!snapshot.verified) return;
  std::printf("%-22s %lld of %lld events\n", "divergences",
              static_cast<long long>(snapshot.divergences),
              static_cast<long long>(snapshot.events_compared));
  if (const auto& first = snapshot.first_divergence) {
    std::printf(
        "first divergence at event %lld (entry %lld)\n  recorded: %s\n"
        "  replayed: %s\n",
        static_cast<long long>(first->event),
        static_cast<long long>(first->entry), first->recorded.c_str(),
        first->model.c_str());
    for (const std::string& line : first->around)
      std::printf("    %s\n", line.c_str());
  }
}

void PrintText(const ReplayFlags& flags, const ReplayOutcome& outcome,
               const ReplayTarget& target) {
  PrintTable(outcome.result.metrics, outcome.description, outcome.min_limit);
  if (outcome.stream_pools) PrintStreamPools(*outcome.stream_pools);
  if (outcome.snapshot)
    PrintSnapshot(*outcome.snapshot, outcome.result.metrics);
  if (flags.list_blocks) PrintOffsets(outcome.result.allocations);
  if (flags.dump) std::printf("\n%s", target.dump().ToText().c_str());
}

// The input as read, and whether it is a snapshot to replay as it ran: one
// with segment events, under the pytorch policy.
struct LoadedInput {
  PreparedTrace trace;
  std::optional<PytorchRecording> recording;
};

LoadedInput Load(const ReplayFlags& flags, AllocatorSpec& spec) {
  constexpr std::string_view kCommand = "replay";
  absl::StatusOr<TraceInput> input = ReadTraceInput(
      flags.trace,
      {.format = std::nullopt, .device = SnapshotDevice(flags, spec)});
  if (!input.ok()) Fail(kCommand, kBadInput, input.status().message());
  absl::StatusOr<PreparedTrace> prepared = PreparedTrace::Prepare(input->trace);
  if (!prepared.ok()) {
    Fail(kCommand, kBadInput,
         flags.trace + ": " + std::string(prepared.status().message()));
  }
  LoadedInput loaded{*std::move(prepared), std::nullopt};
  const bool recorded = input->pytorch_details &&
                        input->pytorch_details->recording.has_segment_events();
  if (flags.verify && !recorded) {
    Fail(kCommand, kBadInput,
         flags.trace +
             ": --verify needs a PyTorch snapshot with segment "
             "events (segment_alloc, segment_map, ...)");
  }
  if (recorded && spec.policy == "pytorch") {
    loaded.recording = std::move(input->pytorch_details->recording);
    spec.config = SnapshotPolicyConfig(*loaded.recording, spec);
  }
  return loaded;
}

// --verify compares the pytorch policy with the recording: it chooses that
// policy unless another was asked for.
AllocatorSpec SpecFor(const ReplayFlags& flags) {
  constexpr std::string_view kCommand = "replay";
  absl::StatusOr<AllocatorSpec> spec = ToAllocatorSpec(flags.allocator);
  if (!spec.ok()) Fail(kCommand, kBadFlags, spec.status().message());
  if (!flags.verify) return *spec;
  const bool policy_given =
      std::any_of(flags.allocator.values.begin(), flags.allocator.values.end(),
                  [](const auto& value) { return value.first == "policy"; });
  if (policy_given && spec->policy != "pytorch") {
    Fail(kCommand, kBadFlags,
         "--verify compares the pytorch policy with the recording, not '" +
             spec->policy + "'");
  }
  spec->policy = "pytorch";
  return *spec;
}

ReplayOutcome ReplayInput(const ReplayFlags& flags, const LoadedInput& input,
                          const AllocatorSpec& config, ReplayTarget& target) {
  constexpr std::string_view kCommand = "replay";
  const ReplayOptions options{.record_offsets = flags.list_blocks,
                              .max_failure_reports = 0};
  absl::StatusOr<ReplayResult> result;
  std::optional<SnapshotComparison> snapshot;
  if (input.recording) {
    absl::StatusOr<SnapshotReplayResult> replayed = ReplaySnapshot(
        input.trace, *input.recording, config, options, flags.verify);
    if (!replayed.ok())
      Fail(kCommand, kBadInput,
           flags.trace + ": " + std::string(replayed.status().message()));
    result = std::move(replayed->replay);
    snapshot = std::move(replayed->comparison);
    target = std::move(replayed->target);
  } else {
    absl::StatusOr<ReplayTarget> created = CreateReplayTarget(config);
    if (!created.ok()) Fail(kCommand, created.status());
    target = *std::move(created);
    result = Replay(input.trace, target, options);
  }
  if (!result.ok()) {
    Fail(kCommand, kBadInput,
         flags.trace + ": " + std::string(result.status().message()));
  }
  return {*std::move(result), std::nullopt, std::nullopt,
          DescribeAllocator(config), std::move(snapshot)};
}

void Run(const ReplayFlags& flags) {
  constexpr std::string_view kCommand = "replay";
  AllocatorSpec config = SpecFor(flags);
  const LoadedInput input = Load(flags, config);
  const PreparedTrace& trace = input.trace;
  const ReplayMetrics timing = MeasureSpeed(kCommand, trace, config);

  ReplayTarget target;
  ReplayOutcome outcome = ReplayInput(flags, input, config, target);
  if (flags.dump && !target.dump) {
    Fail(kCommand, kBadFlags,
         "--dump: allocator '" + config.kind + "' keeps no memory map");
  }
  outcome.result.metrics.seconds = timing.seconds;
  outcome.result.metrics.ns_per_op = timing.ns_per_op;
  if (flags.min_limit) {
    absl::StatusOr<MinimumLimit> found = MinimumLimitFor(trace, config);
    if (!found.ok()) Fail(kCommand, found.status());
    outcome.min_limit = *found;
  }
  if (flags.stream_pools) {
    outcome.stream_pools =
        SimulateStreams(flags.trace, SnapshotDevice(flags, config), config);
  }
  if (flags.json) {
    PrintJson(flags, outcome, target);
  } else {
    PrintText(flags, outcome, target);
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
      "--min-limit,!--no-min-limit", flags->min_limit,
      "also find the smallest limit without growth at which nothing fails "
      "(256 B precision: bisection, then an exact scan below its answer when "
      "affordable; the output says which) (default: off)");
  command->add_flag(
      "--list-blocks", flags->list_blocks,
      "list every allocation: id, offset (address - base), allocated bytes");
  AddFormerName(*command, "--offsets", flags->list_blocks);
  command
      ->add_option("--snapshot-device", flags->snapshot_device,
                   "PyTorch snapshot: which device's events (default: "
                   "--device's)")
      ->check(CLI::NonNegativeNumber);
  command->add_flag("--dump", flags->dump,
                    "print the final memory map (regions, chunks, bins)");
  command->add_flag("--stream-pools", flags->stream_pools,
                    "also replay with one pool per stream= and report the "
                    "bytes stranded in other streams' pools");
  command->add_flag(
      "--verify", flags->verify,
      "PyTorch snapshots: replay under the pytorch policy and compare every "
      "event with the recording (segments obtained and returned, block "
      "addresses); reports the first divergence");
  command->add_flag("--json", flags->json, "print one JSON object");
  command->callback([flags] { Run(*flags); });
}

}  // namespace tensormem::cli
