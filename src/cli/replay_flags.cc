#include "cli/replay_flags.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/alloc/sub_allocator_registry.h"
#include "tensormem/core/units.h"
#include "tensormem/trace/trace_input.h"

namespace tensormem::cli {

namespace {

std::string FlagName(std::string_view key) {
  std::string name(key);
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

std::string HelpFor(const AllocatorOptionInfo& option) {
  std::string help =
      std::string(option.help) + " [" + std::string(option.accepted) + "]";
  const auto list = [&help](std::string_view name, std::string_view summary) {
    help += "\n  " + std::string(name) + ": " + std::string(summary);
  };
  if (option.key == "policy") {
    for (const PolicyInfo& policy : Policies())
      list(policy.name, policy.summary);
  } else if (option.key == "sub_allocator") {
    for (const SubAllocatorInfo& kind : SubAllocatorKinds())
      list(kind.name, kind.summary);
  } else if (option.key == "memory_limit") {
    help += " (default: the capacity, " + HumanBytes(kDefaultCapacity) + ")";
  }
  return help;
}

}  // namespace

void AddAllocatorFlags(CLI::App& command, AllocatorFlags& flags) {
  for (const AllocatorOptionInfo& option : AllocatorOptions()) {
    const std::string key(option.key);
    const std::string name = FlagName(option.key);
    if (option.accepted.starts_with("true/false")) {
      command.add_flag_callback(
          "--" + name,
          [&flags, key] { flags.values.emplace_back(key, "true"); },
          std::string(option.help));
      command.add_flag_callback(
          "--no-" + name,
          [&flags, key] { flags.values.emplace_back(key, "false"); },
          "the opposite of --" + name);
      continue;
    }
    command.add_option_function<std::string>(
        "--" + name,
        [&flags, key](const std::string& value) {
          flags.values.emplace_back(key, value);
        },
        HelpFor(option));
  }
}

absl::StatusOr<AllocatorSpec> ToAllocatorSpec(const AllocatorFlags& flags) {
  AllocatorSpec spec;
  for (const auto& [key, value] : flags.values) {
    if (absl::Status status = SetAllocatorOption(spec, key, value);
        !status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", FlagName(key), ": ", status.message()));
    }
  }
  // Fails early on unknown kinds and bad values, before any trace is read.
  absl::StatusOr<ReplayTarget> probe = CreateReplayTarget(spec);
  if (!probe.ok()) return probe.status();
  return spec;
}

Trace ReadInput(std::string_view command, const std::string& path, int device) {
  absl::StatusOr<TraceInput> input =
      ReadTraceInput(path, {.format = std::nullopt, .device = device});
  if (!input.ok()) Fail(command, 1, std::string(input.status().message()));
  return std::move(input->trace);
}

PreparedTrace LoadTrace(std::string_view command, const std::string& path,
                        int device) {
  const Trace trace = ReadInput(command, path, device);
  absl::StatusOr<PreparedTrace> prepared = PreparedTrace::Prepare(trace);
  if (!prepared.ok())
    Fail(command, 1, path + ": " + std::string(prepared.status().message()));
  return *std::move(prepared);
}

ReplayMetrics MeasureSpeed(std::string_view command, const PreparedTrace& trace,
                           const AllocatorSpec& spec) {
  constexpr int kMaxRuns = 100;
  absl::StatusOr<ReplayMetrics> fastest =
      FastestTimedReplay(trace, spec, kMaxRuns);
  if (!fastest.ok()) Fail(command, 1, std::string(fastest.status().message()));
  return *fastest;
}

ReplayMetrics MeasureWarmSpeed(std::string_view command,
                               const PreparedTrace& trace,
                               const AllocatorSpec& spec) {
  // Under `tight` the pools of the corpus's training traces stop moving by
  // the tenth pass; the timed passes follow.
  constexpr int kWarmPasses = 10;
  constexpr int kMaxPasses = 200;
  absl::StatusOr<ReplayMetrics> fastest =
      FastestWarmReplay(trace, spec, kWarmPasses, kMaxPasses);
  if (!fastest.ok()) Fail(command, 1, std::string(fastest.status().message()));
  return *fastest;
}

absl::StatusOr<MinimumLimit> MinimumLimitFor(const PreparedTrace& trace,
                                             const AllocatorSpec& spec) {
  AllocatorSpec trial = spec;
  trial.growth = false;
  return FindMinimumLimit(
      trace,
      [&trial](uint64_t limit) {
        trial.memory_limit = limit;
        return CreateReplayTarget(trial);
      },
      spec.capacity);
}

}  // namespace tensormem::cli
