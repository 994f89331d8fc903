// `tensormem bench --policies`: every trace of a corpus through several
// allocation policies, one table (docs/policies.md is its output).
#ifndef TENSORMEM_CLI_BENCH_POLICIES_H_
#define TENSORMEM_CLI_BENCH_POLICIES_H_

#include <optional>
#include <string>
#include <vector>

#include "tensormem/trace/whatif.h"

namespace tensormem::cli {

// Replays every trace under every choice (growth on for pool / live; the
// minimum no-growth limit; speed) and prints a Markdown table, or JSON.
void RunPolicyBench(const std::vector<std::string>& trace_paths,
                    const std::vector<std::string>& names,
                    const std::vector<WhatIfCandidate>& choices, bool json);

// `planned` planning inline, from the iteration its plan took over: steady
// pool / steady live, or why no plan served (set in `reason`). Inline, since
// a replay runs a program's calls back to back: a learner in the background
// would have the replay's microseconds where the program gives it whole
// iterations.
std::optional<double> PlannedSteadyRatio(const PreparedTrace& trace,
                                         const std::string& path,
                                         std::string& reason);

}  // namespace tensormem::cli

#endif  // TENSORMEM_CLI_BENCH_POLICIES_H_
