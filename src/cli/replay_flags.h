// Flags shared by `tensormem replay`, `report`, `bench` and `whatif`: which
// allocator a trace is replayed into, and reading their inputs.
#ifndef TENSORMEM_CLI_REPLAY_FLAGS_H_
#define TENSORMEM_CLI_REPLAY_FLAGS_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "cli/failure.h"
#include "tensormem/trace/replay.h"
#include "tensormem/trace/replay_allocator.h"
#include "tensormem/trace/trace.h"

namespace tensormem::cli {

// The allocator specification's options as given on the command line, by key,
// in the order given.
struct AllocatorFlags {
  std::vector<std::pair<std::string, std::string>> values;
};

// Adds one flag per allocator option (allocator_spec.h): `--key-with-dashes
// VALUE`, and `--key` / `--no-key` for yes-or-no options.
void AddAllocatorFlags(CLI::App& command, AllocatorFlags& flags);

// The specification the flags describe, checked (an allocator is built and
// dropped, so bad combinations fail before any trace is read).
absl::StatusOr<AllocatorSpec> ToAllocatorSpec(const AllocatorFlags& flags);

// Reads any trace-like input (ReadTraceInput: `.trace`, RMM log, PyTorch
// snapshot, buffer set); errors end the command with exit code 1. `device`
// picks which device's events a snapshot gives.
Trace ReadInput(std::string_view command, const std::string& path,
                int device = 0);
// ReadInput, then prepared for replay.
PreparedTrace LoadTrace(std::string_view command, const std::string& path,
                        int device = 0);

// FastestTimedReplay with up to 100 runs. Errors end the command with exit
// code 1.
ReplayMetrics MeasureSpeed(std::string_view command, const PreparedTrace& trace,
                           const AllocatorSpec& spec);

// FastestWarmReplay after 10 untimed passes, up to 200 timed ones. Errors
// end the command with exit code 1.
ReplayMetrics MeasureWarmSpeed(std::string_view command,
                               const PreparedTrace& trace,
                               const AllocatorSpec& spec);

// The smallest no-growth limit for `spec`'s allocator (design.md §4).
absl::StatusOr<MinimumLimit> MinimumLimitFor(const PreparedTrace& trace,
                                             const AllocatorSpec& spec);

}  // namespace tensormem::cli

#endif  // TENSORMEM_CLI_REPLAY_FLAGS_H_
