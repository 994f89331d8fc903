// `tensormem convert`: turns RMM logs, PyTorch snapshots, buffer sets and ONNX
// models into traces, and traces into buffer sets (docs/traces.md). Reading,
// summarizing and writing are the library's; this file picks the formats.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/failure.h"
#include "cli/model_input.h"
#include "nlohmann/json.hpp"
#include "tensormem/core/file_io.h"
#include "tensormem/core/units.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/trace/trace_input.h"
#include "tensormem/trace/trace_io.h"
#include "tensormem/trace/trace_summary.h"

namespace tensormem::cli {
namespace {

constexpr std::string_view kCommand = "convert";

struct ConvertFlags {
  std::string input;
  std::string output;
  std::string from = "auto";
  std::string to = "auto";
  int device = 0;
  bool closed = false;
  bool json = false;
  ModelFlags model;  // .onnx inputs
};

// "onnx" or a TraceFormatName, from the flag or detected.
std::string InputFormat(const ConvertFlags& flags) {
  if (flags.from != "auto") return flags.from;
  if (flags.input != "-" && IsModelInput(flags.input)) return "onnx";
  return std::string(TraceFormatName(DetectTraceFormat(flags.input)));
}

std::string OutputFormat(const ConvertFlags& flags) {
  if (flags.to != "auto") return flags.to;
  if (absl::EndsWith(flags.output, ".json")) return "graph";
  return absl::EndsWith(flags.output, ".csv") ? "buffers" : "trace";
}

void Write(const std::string& path, const std::string& text) {
  if (absl::Status written = WriteTextFile(path, text); !written.ok()) {
    Fail(kCommand, written);
  }
}

// A model's intermediates as a buffer set or the arena planner's graph; a
// trace goes through the buffer set.
std::optional<Trace> ConvertModel(const ConvertFlags& flags,
                                  const std::string& to,
                                  nlohmann::ordered_json& json) {
  int exit_code = kBadInput;
  absl::StatusOr<LoadedModel> model =
      LoadModelInput(flags.input, flags.model, exit_code);
  if (!model.ok()) Fail(kCommand, exit_code, model.status().message());
  json["model"] = model->summary;
  if (to == "trace") {
    absl::StatusOr<Trace> trace = BufferSetToTrace(model->buffers);
    if (!trace.ok()) Fail(kCommand, trace.status());
    return *std::move(trace);
  }
  if (to == "graph") {
    Write(flags.output, FormatArenaGraphJson(model->graph));
    json["tensors"] = model->graph.tensors.size();
    json["nodes"] = model->graph.nodes.size();
  } else {
    Write(flags.output, FormatBufferSetCsv(model->buffers));
    json["buffers"] = model->buffers.buffers.size();
  }
  json["peak_live_bytes"] = PeakLiveBytes(model->buffers);
  return std::nullopt;
}

// Any trace-like input, with a snapshot's import details in `json`.
Trace ReadAsTrace(const ConvertFlags& flags, const std::string& from,
                  nlohmann::ordered_json& json) {
  absl::StatusOr<TraceFormat> format = ParseTraceFormat(from);
  if (!format.ok()) Fail(kCommand, kBadFlags, format.status().message());
  absl::StatusOr<TraceInput> input =
      ReadTraceInput(flags.input, {.format = *format, .device = flags.device});
  if (!input.ok()) Fail(kCommand, input.status());
  if (input->pytorch_details) {
    json["device"] = flags.device;
    json["devices"] = input->pytorch_details->devices;
    json["blocks_live_at_start"] = input->pytorch_details->blocks_live_at_start;
    json["entries_skipped"] = input->pytorch_details->entries_skipped;
  }
  return std::move(input->trace);
}

void PrintSummary(const ConvertFlags& flags,
                  const nlohmann::ordered_json& json) {
  if (flags.json) {
    std::printf("%s\n", json.dump(2).c_str());
    return;
  }
  // With the converted data on stdout, the summary goes to stderr.
  std::FILE* report = flags.output == "-" ? stderr : stdout;
  for (const auto& [key, value] : json.items()) {
    std::string text =
        value.is_string() ? value.get<std::string>() : value.dump();
    if (key == "peak_live_bytes") {
      const uint64_t bytes = value.get<uint64_t>();
      text = absl::StrFormat("%s (%d B)", HumanBytes(bytes), bytes);
    }
    std::fprintf(report, "%-22s %s\n", key.c_str(), text.c_str());
  }
}

void WriteTraceAs(const ConvertFlags& flags, const std::string& to,
                  const Trace& trace, nlohmann::ordered_json& json) {
  if (to == "trace") {
    if (absl::Status written = WriteTrace(trace, flags.output); !written.ok()) {
      Fail(kCommand, written);
    }
    return;
  }
  absl::StatusOr<BufferSet> set =
      TraceToBufferSet(trace, flags.closed ? IntervalConvention::kClosed
                                           : IntervalConvention::kHalfOpen);
  if (!set.ok()) {
    Fail(kCommand, kBadInput,
         flags.input + ": " + std::string(set.status().message()));
  }
  Write(flags.output, FormatBufferSetCsv(*set));
  json["buffers"] = set->buffers.size();
}

void Run(const ConvertFlags& flags) {
  const std::string from = InputFormat(flags);
  const std::string to = OutputFormat(flags);
  if (flags.json && flags.output == "-") {
    Fail(kCommand, kBadFlags,
         "--json prints the summary on stdout; give an OUTPUT file instead of "
         "'-'");
  }
  if (to == "graph" && from != "onnx") {
    Fail(kCommand, kBadFlags,
         "only a model (.onnx) converts to an arena graph (.json)");
  }
  nlohmann::ordered_json json = {{"input", flags.input},
                                 {"output", flags.output},
                                 {"from", from},
                                 {"to", to}};
  std::optional<Trace> trace;
  if (from == "onnx") {
    trace = ConvertModel(flags, to, json);
    if (!trace) return PrintSummary(flags, json);
  } else {
    trace = ReadAsTrace(flags, from, json);
  }
  // The replay's definitions (trace_summary.h): `replay` reports the same.
  absl::StatusOr<TraceSummary> summary = SummarizeTrace(*trace);
  if (!summary.ok()) {
    Fail(kCommand, kBadInput,
         flags.input + ": " + std::string(summary.status().message()));
  }
  WriteTraceAs(flags, to, *trace, json);
  json.update(TraceSummaryToJson(*summary));
  PrintSummary(flags, json);
}

}  // namespace

void AddConvertCommand(CLI::App& app) {
  auto flags = std::make_shared<ConvertFlags>();
  CLI::App* command = app.add_subcommand(
      "convert",
      "Convert RMM logs, PyTorch memory snapshots and "
      "buffer sets to traces, traces to "
      "buffer sets, and ONNX models to buffer sets or arena graphs.\n"
      "Formats are inferred from the names (.trace, .csv: RMM "
      "log or buffer set by its header, .pickle; each may "
      "end in .gz; .onnx; .json: arena graph) unless given.\n"
      "Examples: tensormem convert tests/data/trace/snapshot_protocol4.pickle "
      "model.trace.gz --snapshot-device 0 --json\n"
      "          tensormem convert data/onnx/mobilenet_v2.onnx records.csv "
      "--fuse-activations");
  command
      ->add_option("input", flags->input, "input file ('-' = stdin for traces)")
      ->required();
  command->add_option("output", flags->output, "output file ('-' = stdout)")
      ->required();
  command->add_option("--from", flags->from, "input format")
      ->check(
          CLI::IsMember({"auto", "trace", "rmm", "pytorch", "buffers", "onnx"}))
      ->capture_default_str();
  command->add_option("--to", flags->to, "output format")
      ->check(CLI::IsMember({"auto", "trace", "buffers", "graph"}))
      ->capture_default_str();
  command
      ->add_option("--snapshot-device", flags->device,
                   "PyTorch snapshot: which device's trace")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  AddFormerName(*command, "--device", flags->device)
      ->check(CLI::NonNegativeNumber);
  command->add_flag(
      "--closed", flags->closed,
      "buffer set output in the closed first_task,last_task convention");
  command->add_flag("--json", flags->json, "print a one-object JSON summary");
  AddModelFlags(*command, flags->model);
  command->callback([flags] { Run(*flags); });
}

}  // namespace tensormem::cli
