// `tensormem whatif`: one workload through several allocator policies and
// configurations, compared in one table (docs/replay.md, "What-if").
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/commands.h"
#include "cli/replay_flags.h"
#include "nlohmann/json.hpp"
#include "tensormem/core/units.h"
#include "tensormem/report/plan_html.h"
#include "tensormem/report/whatif_html.h"
#include "tensormem/report/whatif_text.h"
#include "tensormem/trace/trace_input.h"
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

// The input prepared, and a snapshot's recording when it has segment events.
struct WhatIfInput {
  PreparedTrace trace;
  std::optional<PytorchRecording> recording;
};

WhatIfInput Load(const WhatIfFlags& flags) {
  absl::StatusOr<TraceInput> input = ReadTraceInput(
      flags.input, {.format = std::nullopt, .device = flags.device});
  if (!input.ok()) Fail(kCommand, 1, std::string(input.status().message()));
  absl::StatusOr<PreparedTrace> prepared = PreparedTrace::Prepare(input->trace);
  if (!prepared.ok())
    Fail(kCommand, 1,
         flags.input + ": " + std::string(prepared.status().message()));
  WhatIfInput loaded{*std::move(prepared), std::nullopt};
  if (input->pytorch_details) {
    if (input->pytorch_details->recording.has_segment_events()) {
      loaded.recording = std::move(input->pytorch_details->recording);
    } else {
      std::fprintf(stderr,
                   "tensormem whatif: %s: the snapshot has no segment events "
                   "(segment_alloc, segment_map, ...): no recorded row\n",
                   flags.input.c_str());
    }
  }
  return loaded;
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
  const WhatIfInput input = Load(flags);
  if (input.recording) options.recording = &*input.recording;
  absl::StatusOr<WhatIfResult> result =
      RunWhatIf(input.trace, candidates, options);
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
  std::printf("%s", RenderWhatIfText(*result).c_str());
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
      "On a PyTorch snapshot with segment events, a recorded row (what "
      "PyTorch reserved on the GPU) comes first, the candidate with the "
      "snapshot's settings is also replayed as the GPU ran it and checked "
      "against the recording, and a recommendation ends the output: the "
      "PyTorch setting that reserves least and what tensormem's tight would "
      "save.\n"
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
      ->add_option("--snapshot-device", flags->device,
                   "PyTorch snapshot: which device's events (default 0)")
      ->check(CLI::NonNegativeNumber);
  AddFormerName(*command, "--device", flags->device)
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
