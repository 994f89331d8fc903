// `tensormem bench --policies`: every trace of a corpus through several
// allocation policies, one table (docs/policies.md is its output).
#ifndef TENSORMEM_CLI_BENCH_POLICIES_H_
#define TENSORMEM_CLI_BENCH_POLICIES_H_

#include <string>
#include <vector>

#include "tensormem/trace/whatif.h"

namespace tensormem::cli {

// Replays every trace under every choice (growth on for pool / live; the
// minimum no-growth limit; speed) and prints a Markdown table, or JSON.
void RunPolicyBench(const std::vector<std::string>& trace_paths,
                    const std::vector<std::string>& names,
                    const std::vector<WhatIfCandidate>& choices, bool json);

}  // namespace tensormem::cli

#endif  // TENSORMEM_CLI_BENCH_POLICIES_H_
