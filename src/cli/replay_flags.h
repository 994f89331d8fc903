// Flags shared by `tensormem replay`, `report` and `bench`: which allocator a
// trace is replayed into, and the one way these commands fail.
#ifndef TENSORMEM_CLI_REPLAY_FLAGS_H_
#define TENSORMEM_CLI_REPLAY_FLAGS_H_

#include <string>
#include <string_view>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "tensormem/trace/replay.h"
#include "tensormem/trace/replay_allocator.h"

namespace tensormem::cli {

struct AllocatorFlags {
  std::string allocator = "bfc";
  std::string sub_allocator = "simulated";
  std::string memory_limit;  // empty: kDefaultReplayCapacity
  bool growth = true;
  bool gc = false;
  double fragmentation_fraction = 0;
};

// Adds --allocator, --sub-allocator, --memory-limit, --growth/--no-growth,
// --gc and --fragmentation-fraction to `command`.
void AddAllocatorFlags(CLI::App& command, AllocatorFlags& flags);

// Validates the flags (sizes parsed, the sub-allocator only with bfc).
absl::StatusOr<ReplayAllocatorConfig> ToReplayConfig(
    const AllocatorFlags& flags);

// Prints "tensormem <command>: <message>" on stderr and ends the command with
// `exit_code` (1: bad input or failed run, 2: bad flags).
[[noreturn]] void Fail(std::string_view command, int exit_code,
                       std::string_view message);

// Reads and prepares a trace; errors end the command with exit code 1.
PreparedTrace LoadTrace(std::string_view command, const std::string& path);

// Times the allocator calls alone (TimeReplay) on fresh allocators, repeated
// until 50 ms were measured or 10 runs, so short traces are not just noise;
// keeps the fastest run. Errors end the command with exit code 1.
ReplayMetrics MeasureSpeed(std::string_view command, const PreparedTrace& trace,
                           const ReplayAllocatorConfig& config);

// The smallest no-growth limit for `config`'s allocator (design.md §4).
absl::StatusOr<MinimumLimit> MinimumLimitFor(
    const PreparedTrace& trace, const ReplayAllocatorConfig& config);

}  // namespace tensormem::cli

#endif  // TENSORMEM_CLI_REPLAY_FLAGS_H_
