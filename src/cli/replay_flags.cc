#include "cli/replay_flags.h"

#include <cstdio>

#include "tensormem/core/units.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem::cli {

void AddAllocatorFlags(CLI::App& command, AllocatorFlags& flags) {
  command.add_option("--allocator", flags.allocator, "bfc (default) or system");
  command.add_option(
      "--sub-allocator", flags.sub_allocator,
      "where bfc gets its regions: simulated (default, address space only), "
      "host or vmm");
  command.add_option("--memory-limit", flags.memory_limit,
                     "limit such as 16G (default: the simulated capacity, " +
                         HumanBytes(kDefaultReplayCapacity) + ")");
  command.add_flag("--growth,!--no-growth", flags.growth,
                   "grow the pool region by region (default) or take the whole "
                   "limit at once");
  command.add_flag("--gc", flags.gc,
                   "bfc: return empty regions to the upstream on failure");
  command.add_option("--fragmentation-fraction", flags.fragmentation_fraction,
                     "bfc: split a chunk when the unused tail is at least this "
                     "fraction of the "
                     "limit (0: default rule)");
}

absl::StatusOr<ReplayAllocatorConfig> ToReplayConfig(
    const AllocatorFlags& flags) {
  ReplayAllocatorConfig config;
  config.allocator = flags.allocator;
  config.sub_allocator = flags.sub_allocator;
  config.growth = flags.growth;
  config.garbage_collection = flags.gc;
  config.fragmentation_fraction = flags.fragmentation_fraction;
  if (!flags.memory_limit.empty()) {
    absl::StatusOr<uint64_t> limit = ParseByteSize(flags.memory_limit);
    if (!limit.ok()) return limit.status();
    config.memory_limit = *limit;
  }
  if (config.allocator != "bfc" &&
      (config.sub_allocator != "simulated" || config.garbage_collection ||
       !config.growth || config.fragmentation_fraction != 0)) {
    return absl::InvalidArgumentError(
        "--sub-allocator, --gc, --no-growth and --fragmentation-fraction apply "
        "to --allocator "
        "bfc only");
  }
  // Fails early on unknown kinds and bad values, before any trace is read.
  absl::StatusOr<ReplayTarget> probe = CreateReplayTarget(config);
  if (!probe.ok()) return probe.status();
  return config;
}

void Fail(std::string_view command, int exit_code, std::string_view message) {
  std::fprintf(stderr, "tensormem %.*s: %.*s\n",
               static_cast<int>(command.size()), command.data(),
               static_cast<int>(message.size()), message.data());
  throw CLI::RuntimeError(exit_code);
}

PreparedTrace LoadTrace(std::string_view command, const std::string& path) {
  absl::StatusOr<Trace> trace = ReadTrace(path);
  if (!trace.ok()) Fail(command, 1, std::string(trace.status().message()));
  absl::StatusOr<PreparedTrace> prepared = PreparedTrace::Prepare(*trace);
  if (!prepared.ok())
    Fail(command, 1, path + ": " + std::string(prepared.status().message()));
  return *std::move(prepared);
}

ReplayMetrics MeasureSpeed(std::string_view command, const PreparedTrace& trace,
                           const ReplayAllocatorConfig& config) {
  constexpr double kEnoughSeconds = 0.05;
  constexpr int kMaxRuns = 10;
  ReplayMetrics fastest;
  double measured = 0;
  for (int run = 0; run < kMaxRuns && measured < kEnoughSeconds; ++run) {
    absl::StatusOr<ReplayTarget> target = CreateReplayTarget(config);
    if (!target.ok()) Fail(command, 1, std::string(target.status().message()));
    ReplayMetrics timing;
    TimeReplay(trace, *target, timing);
    measured += timing.seconds;
    if (run == 0 || timing.ns_per_op < fastest.ns_per_op) fastest = timing;
  }
  return fastest;
}

absl::StatusOr<MinimumLimit> MinimumLimitFor(
    const PreparedTrace& trace, const ReplayAllocatorConfig& config) {
  ReplayAllocatorConfig trial = config;
  trial.growth = false;
  return FindMinimumLimit(
      trace,
      [&trial](uint64_t limit) {
        trial.memory_limit = limit;
        return CreateReplayTarget(trial);
      },
      config.capacity);
}

}  // namespace tensormem::cli
