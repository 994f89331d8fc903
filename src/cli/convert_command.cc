// `tensormem convert`: turns RMM logs, PyTorch snapshots and buffer sets into
// traces, and traces into buffer sets (docs/traces.md).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/model_input.h"
#include "nlohmann/json.hpp"
#include "tensormem/core/checked_math.h"
#include "tensormem/core/units.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/trace/importers.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem::cli {
namespace {

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

[[noreturn]] void ConvertFail(int exit_code, std::string_view message) {
  std::fflush(stdout);
  std::fprintf(stderr, "tensormem convert: %.*s\n",
               static_cast<int>(message.size()), message.data());
  std::exit(exit_code);
}

[[noreturn]] void ConvertFail(const absl::Status& status) {
  ConvertFail(
      1, std::string_view(status.message().data(), status.message().size()));
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return absl::EndsWith(absl::string_view(text.data(), text.size()),
                        absl::string_view(suffix.data(), suffix.size()));
}

// The start of a file, inflated: enough to tell an RMM log from a buffer set
// by its header, or a pickle by its first opcode.
std::string FileStart(const std::string& path) {
  absl::StatusOr<std::string> start = ReadFileInflated(path, 4096);
  return start.ok() ? *start : std::string();
}

std::string InferInputFormat(const std::string& path) {
  if (path == "-") return "trace";
  std::string_view name = path;
  if (EndsWith(name, ".gz")) name.remove_suffix(3);
  if (EndsWith(name, ".pickle") || EndsWith(name, ".pkl")) return "pytorch";
  if (EndsWith(name, ".trace")) return "trace";
  if (IsModelInput(path)) return "onnx";
  const std::string start = FileStart(path);
  if (EndsWith(name, ".csv")) {
    const std::string header = start.substr(0, start.find('\n'));
    return absl::StrContains(header, "Action") &&
                   absl::StrContains(header, "Pointer")
               ? "rmm"
               : "buffers";
  }
  // No telling extension: a pickle starts with the PROTO opcode.
  return !start.empty() && static_cast<uint8_t>(start[0]) == 0x80 ? "pytorch"
                                                                  : "trace";
}

std::string InferOutputFormat(const std::string& path) {
  if (EndsWith(path, ".json")) return "graph";
  return EndsWith(path, ".csv") ? "buffers" : "trace";
}

void WriteOutput(const std::string& path, const std::string& text) {
  std::FILE* out = path == "-" ? stdout : std::fopen(path.c_str(), "wb");
  if (out == nullptr) ConvertFail(1, path + ": cannot create");
  const bool ok =
      std::fwrite(text.data(), 1, text.size(), out) == text.size() &&
      (out == stdout ? std::fflush(out) : std::fclose(out)) == 0;
  if (!ok) ConvertFail(1, path + ": write failed");
}

// A model's intermediates as a buffer set or the arena planner's graph; a
// trace goes through the buffer set.
std::optional<Trace> ConvertModel(const ConvertFlags& flags,
                                  const std::string& to,
                                  nlohmann::ordered_json& json) {
  int exit_code = 1;
  absl::StatusOr<LoadedModel> model =
      LoadModelInput(flags.input, flags.model, exit_code);
  if (!model.ok())
    ConvertFail(exit_code, std::string(model.status().message()));
  json["model"] = model->summary;
  if (to == "trace") {
    absl::StatusOr<Trace> trace = BufferSetToTrace(model->buffers);
    if (!trace.ok()) ConvertFail(trace.status());
    return *std::move(trace);
  }
  if (to == "graph") {
    WriteOutput(flags.output, FormatArenaGraphJson(model->graph));
    json["tensors"] = model->graph.tensors.size();
    json["nodes"] = model->graph.nodes.size();
  } else {
    WriteOutput(flags.output, FormatBufferSetCsv(model->buffers));
    json["buffers"] = model->buffers.buffers.size();
  }
  json["peak_live_bytes"] = PeakLiveBytes(model->buffers);
  return std::nullopt;
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

struct Summary {
  int64_t events = 0, allocs = 0, frees = 0, failed_allocs = 0, live_at_end = 0;
  uint64_t peak_live_bytes = 0;
};

// Counts and the peak of live bytes; fails when the live bytes of the trace
// overflow 64 bits (a corrupt size), which no conversion should pass on.
absl::StatusOr<Summary> Summarize(const Trace& trace) {
  Summary summary;
  absl::flat_hash_map<uint64_t, uint64_t> live;  // id -> bytes
  uint64_t live_bytes = 0;
  for (const TraceEvent& event : trace.events) {
    ++summary.events;
    if (event.op == TraceOp::kAlloc) {
      ++summary.allocs;
      if (event.failed) {
        ++summary.failed_allocs;
        continue;
      }
      live[event.id] = event.bytes;
      const std::optional<uint64_t> sum = CheckedAdd(live_bytes, event.bytes);
      if (!sum) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "event %d: live bytes overflow 64 bits", summary.events - 1));
      }
      live_bytes = *sum;
      summary.peak_live_bytes = std::max(summary.peak_live_bytes, live_bytes);
    } else {
      ++summary.frees;
      auto it = live.find(event.id);
      if (it == live.end()) continue;
      live_bytes -= it->second;
      live.erase(it);
    }
  }
  summary.live_at_end = live.size();
  return summary;
}

void Run(const ConvertFlags& flags) {
  const std::string from =
      flags.from == "auto" ? InferInputFormat(flags.input) : flags.from;
  const std::string to =
      flags.to == "auto" ? InferOutputFormat(flags.output) : flags.to;
  if (flags.json && flags.output == "-") {
    ConvertFail(2,
                "--json prints the summary on stdout; give an OUTPUT file "
                "instead of '-'");
  }
  nlohmann::ordered_json json = {{"input", flags.input},
                                 {"output", flags.output},
                                 {"from", from},
                                 {"to", to}};

  if (to == "graph" && from != "onnx") {
    ConvertFail(2, "only a model (.onnx) converts to an arena graph (.json)");
  }
  Trace trace;
  if (from == "onnx") {
    std::optional<Trace> converted = ConvertModel(flags, to, json);
    if (!converted) return PrintSummary(flags, json);
    trace = *std::move(converted);
  } else if (from == "trace") {
    absl::StatusOr<Trace> read = ReadTrace(flags.input);
    if (!read.ok()) ConvertFail(read.status());
    trace = *std::move(read);
  } else if (from == "rmm") {
    absl::StatusOr<Trace> read = ReadRmmLog(flags.input);
    if (!read.ok()) ConvertFail(read.status());
    trace = *std::move(read);
  } else if (from == "pytorch") {
    absl::StatusOr<PytorchImport> read =
        ReadPytorchSnapshot(flags.input, {.device = flags.device});
    if (!read.ok()) ConvertFail(read.status());
    trace = std::move(read->trace);
    json["device"] = flags.device;
    json["devices"] = read->devices;
    json["blocks_live_at_start"] = read->blocks_live_at_start;
    json["entries_skipped"] = read->entries_skipped;
  } else {  // buffers
    absl::StatusOr<std::string> text = ReadWholeFileInflated(flags.input);
    if (!text.ok()) ConvertFail(text.status());
    absl::StatusOr<BufferSet> set = ParseBufferSetCsv(*text, flags.input);
    if (!set.ok()) ConvertFail(set.status());
    absl::StatusOr<Trace> converted = BufferSetToTrace(*set);
    if (!converted.ok())
      ConvertFail(
          1, flags.input + ": " + std::string(converted.status().message()));
    trace = *std::move(converted);
  }

  absl::StatusOr<Summary> summarized = Summarize(trace);
  if (!summarized.ok()) {
    ConvertFail(
        1, flags.input + ": " + std::string(summarized.status().message()));
  }
  const Summary& summary = *summarized;
  if (to == "trace") {
    if (absl::Status written = WriteTrace(trace, flags.output); !written.ok()) {
      ConvertFail(written);
    }
  } else {
    absl::StatusOr<BufferSet> set =
        TraceToBufferSet(trace, flags.closed ? IntervalConvention::kClosed
                                             : IntervalConvention::kHalfOpen);
    if (!set.ok())
      ConvertFail(1, flags.input + ": " + std::string(set.status().message()));
    WriteOutput(flags.output, FormatBufferSetCsv(*set));
    json["buffers"] = set->buffers.size();
  }

  json["events"] = summary.events;
  json["allocs"] = summary.allocs;
  json["frees"] = summary.frees;
  json["failed_allocs"] = summary.failed_allocs;
  json["live_at_end"] = summary.live_at_end;
  json["peak_live_bytes"] = summary.peak_live_bytes;
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
      "Examples: tensormem convert snapshot.pickle "
      "model.trace.gz --device 0 --json\n"
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
      ->add_option("--device", flags->device,
                   "PyTorch snapshot: which device's trace")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_flag(
      "--closed", flags->closed,
      "buffer set output in the closed first_task,last_task convention");
  command->add_flag("--json", flags->json, "print a one-object JSON summary");
  AddModelFlags(*command, flags->model);
  command->callback([flags] { Run(*flags); });
}

}  // namespace tensormem::cli
