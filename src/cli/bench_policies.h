// `tensormem bench --policies`: every trace of a corpus through several
// allocation policies, one table (docs/policies.md is its output).
#ifndef TENSORMEM_CLI_BENCH_POLICIES_H_
#define TENSORMEM_CLI_BENCH_POLICIES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/alloc/allocator_spec.h"

namespace tensormem::cli {

struct PolicyChoice {
  std::string label;  // as given: "pytorch[expandable_segments:True]"
  AllocatorSpec spec;
};

// Parses `all` or a comma-separated list of `policy` or `policy[config]`
// (commas inside brackets belong to the config). `all`: every registered
// policy, plus pytorch with expandable segments.
absl::StatusOr<std::vector<PolicyChoice>> ParsePolicyChoices(
    const std::string& text);

// Replays every trace under every choice (growth on for pool / live; the
// minimum no-growth limit; speed) and prints a Markdown table, or JSON.
void RunPolicyBench(const std::vector<std::string>& trace_paths,
                    const std::vector<std::string>& names,
                    const std::vector<PolicyChoice>& choices, bool json);

}  // namespace tensormem::cli

#endif  // TENSORMEM_CLI_BENCH_POLICIES_H_
