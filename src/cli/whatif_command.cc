// `tensormem whatif`: one workload through several allocator policies and
// configurations, compared in one table (docs/replay.md, "What-if").
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/commands.h"
#include "cli/replay_flags.h"
#include "nlohmann/json.hpp"
#include "tensormem/core/units.h"
#include "tensormem/report/plan_html.h"
#include "tensormem/report/whatif_html.h"
#include "tensormem/trace/whatif.h"

namespace tensormem::cli {
namespace {

constexpr std::string_view kCommand = "whatif";
constexpr size_t kTimelineSamples = 1000;

struct WhatIfFlags {
  std::string input;
  int device = 0;
  std::string policies;
  std::vector<std::string> tries;
  std::string device_memory;
  bool min_limit = true;
  std::string html;
  bool json = false;
};

std::vector<WhatIfCandidate> Candidates(const WhatIfFlags& flags) {
  std::vector<WhatIfCandidate> candidates;
  const auto add = [&candidates](const std::string& flag,
                                 const std::string& text) {
    absl::StatusOr<std::vector<WhatIfCandidate>> parsed =
        ParseWhatIfCandidates(text);
    if (!parsed.ok())
      Fail(kCommand, 2, flag + ": " + std::string(parsed.status().message()));
    candidates.insert(candidates.end(), parsed->begin(), parsed->end());
  };
  if (!flags.policies.empty()) add("--policies", flags.policies);
  for (const std::string& one : flags.tries) add("--try", one);
  return candidates.empty() ? DefaultWhatIfCandidates() : candidates;
}

void PrintTable(const WhatIfResult& result) {
  std::printf("peak live %s", HumanBytes(result.peak_live_bytes).c_str());
  if (result.device_memory)
    std::printf(", device memory %s",
                HumanBytes(*result.device_memory).c_str());
  std::printf("\n\n");
  std::vector<std::vector<std::string>> lines = {WhatIfTableHeader()};
  for (auto& row : WhatIfTableRows(result)) lines.push_back(std::move(row));
  std::vector<size_t> widths(lines[0].size(), 0);
  for (const auto& line : lines) {
    for (size_t c = 0; c < line.size(); ++c)
      widths[c] = std::max(widths[c], line[c].size());
  }
  for (const auto& line : lines) {
    for (size_t c = 0; c < line.size(); ++c) {
      std::printf(c == 0 ? "%-*s" : "  %*s", static_cast<int>(widths[c]),
                  line[c].c_str());
    }
    std::printf("\n");
  }
  for (const WhatIfRow& row : result.rows) {
    if (row.min_limit && row.min_limit->method == MinLimitMethod::kBisection) {
      std::printf(
          "\n%s: min limit by bisection only (assumes monotone; the "
          "exact scan was too costly)",
          row.label.c_str());
    }
    if (!row.out_of_memory) continue;
    const WhatIfOutOfMemory& oom = *row.out_of_memory;
    std::printf(
        "\n%s: out of memory at event %lld, a request of %s with %s live and "
        "%s reserved (%lld failed allocations in all)\n%s\n",
        row.label.c_str(), static_cast<long long>(oom.event),
        HumanBytes(oom.bytes).c_str(), HumanBytes(oom.live_bytes).c_str(),
        HumanBytes(oom.reserved_bytes).c_str(),
        static_cast<long long>(oom.failed_allocs), oom.explanation.c_str());
  }
}

void Run(const WhatIfFlags& flags) {
  const std::vector<WhatIfCandidate> candidates = Candidates(flags);
  WhatIfOptions options;
  options.min_limit = flags.min_limit;
  options.timeline_samples = flags.html.empty() ? 0 : kTimelineSamples;
  if (!flags.device_memory.empty()) {
    absl::StatusOr<uint64_t> bytes = ParseByteSize(flags.device_memory);
    if (!bytes.ok() || *bytes == 0) {
      Fail(kCommand, 2,
           "--device-memory: '" + flags.device_memory +
               "' is not a size > 0 (e.g. 80G, 512MiB, 4096)");
    }
    options.device_memory = *bytes;
  }
  const PreparedTrace trace = LoadTrace(kCommand, flags.input, flags.device);
  absl::StatusOr<WhatIfResult> result = RunWhatIf(trace, candidates, options);
  if (!result.ok())
    Fail(kCommand, 1,
         flags.input + ": " + std::string(result.status().message()));
  if (!flags.html.empty()) {
    const absl::Status written =
        WriteHtmlFile(flags.html, RenderWhatIfHtml(*result, flags.input));
    if (!written.ok()) Fail(kCommand, 1, std::string(written.message()));
  }
  if (flags.json) {
    nlohmann::json json = WhatIfToJson(*result);
    json["input"] = flags.input;
    if (!flags.html.empty()) json["html"] = flags.html;
    std::printf("%s\n", json.dump(2).c_str());
    return;
  }
  PrintTable(*result);
}

}  // namespace

void AddWhatIfCommand(CLI::App& app) {
  auto flags = std::make_shared<WhatIfFlags>();
  CLI::App* command = app.add_subcommand(
      "whatif",
      "Replay one workload through several allocator policies and "
      "configurations and compare peak reserved bytes, the smallest device "
      "memory that serves it, fragmentation, speed and where each runs out "
      "of memory.\n"
      "A candidate is a policy and allocator options as key=value, e.g. "
      "\"pytorch config=expandable_segments:True\".\n"
      "Example: tensormem whatif tests/data/trace/snapshot_protocol4.pickle "
      "--policies \"tf; pytorch; pytorch config=max_split_size_mb:512\" "
      "--device-memory 8K --html whatif.html");
  command
      ->add_option("input", flags->input,
                   "trace (.trace[.gz]), PyTorch snapshot (.pickle), RMM log "
                   "or buffer set (.csv)")
      ->required()
      ->check(CLI::ExistingFile);
  command
      ->add_option("--device", flags->device,
                   "PyTorch snapshot: which device's events (default 0)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--policies", flags->policies,
                      "candidates separated by ';' (default: \"" +
                          std::string(kDefaultWhatIfCandidates) + "\")");
  command->add_option("--try", flags->tries,
                      "one more candidate (repeatable), e.g. --try \"pytorch "
                      "config=roundup_power2_divisions:4\"");
  command->add_option("--device-memory", flags->device_memory,
                      "also replay each candidate limited to this much memory "
                      "and say whether and where it runs out (e.g. 80G)");
  command->add_flag("--min-limit,!--no-min-limit", flags->min_limit,
                    "search each candidate's smallest serving limit (default: "
                    "on)");
  command->add_option("--html", flags->html,
                      "also write a page with reserved bytes over time for "
                      "every candidate");
  command->add_flag("--json", flags->json, "print one JSON object");
  command->callback([flags] { Run(*flags); });
}

}  // namespace tensormem::cli
