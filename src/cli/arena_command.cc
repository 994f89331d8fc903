// `tensormem arena`: TFLite's arena planner on a graph (design.md §3.3), or on
// a buffer set turned into a graph with the same lifetimes.
#include <cstdio>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/failure.h"
#include "cli/model_input.h"
#include "nlohmann/json.hpp"
#include "tensormem/core/units.h"
#include "tensormem/plan/arena/arena_plan_export.h"
#include "tensormem/plan/arena/arena_planner.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/report/plan_html.h"

namespace tensormem::cli {
namespace {

struct ArenaFlags {
  std::string input;
  std::string planner = "greedy";
  bool preserve_inputs = false;
  bool preserve_intermediates = false;
  bool preserve_all_tensors = false;
  std::string tensor_alignment = "64";
  std::string arena_alignment = "64";
  bool json = false;
  std::string html;
  ModelFlags model;              // .onnx inputs
  nlohmann::json model_summary;  // set when the input was a model
};

constexpr std::string_view kCommand = "arena";

size_t ParseAlignment(const std::string& text, const char* flag) {
  absl::StatusOr<uint64_t> value = ParseByteSize(text);
  if (!value.ok() || *value == 0 || (*value & (*value - 1)) != 0) {
    Fail(kCommand, 2,
         absl::StrFormat("%s '%s' must be a power of two", flag, text));
  }
  return *value;
}

ArenaGraph ReadInput(ArenaFlags& flags) {
  const std::string& path = flags.input;
  if (IsModelInput(path)) {
    int exit_code = 1;
    absl::StatusOr<LoadedModel> model =
        LoadModelInput(path, flags.model, exit_code);
    if (!model.ok())
      Fail(kCommand, exit_code, std::string(model.status().message()));
    if (!flags.json) std::printf("%s\n", model->summary_line.c_str());
    flags.model_summary = model->summary;
    return std::move(model->graph);
  }
  if (absl::EndsWith(path, ".csv")) {
    absl::StatusOr<BufferSet> set = ReadBufferSetCsv(path);
    if (!set.ok()) Fail(kCommand, 1, std::string(set.status().message()));
    absl::StatusOr<ArenaGraph> graph = ArenaGraphFromBufferSet(*set);
    if (!graph.ok()) {
      Fail(kCommand, 1,
           absl::StrFormat("%s: %s", path, graph.status().message()));
    }
    return *std::move(graph);
  }
  absl::StatusOr<ArenaGraph> graph = ReadArenaGraphJson(path);
  if (!graph.ok()) Fail(kCommand, 1, std::string(graph.status().message()));
  return *std::move(graph);
}

std::string Lifetime(const TensorPlacement& p) {
  return p.last_node == kNodeNotAssigned
             ? absl::StrFormat("[%d, end]", p.first_node)
             : absl::StrFormat("[%d, %d]", p.first_node, p.last_node);
}

nlohmann::json OffsetsJson(const ArenaPlanner& planner) {
  nlohmann::json offsets = nlohmann::json::array();
  for (size_t t = 0; t < planner.graph().tensors.size(); ++t) {
    std::optional<TensorPlacement> p = planner.Placement(t);
    if (!p) {
      offsets.push_back(nullptr);
      continue;
    }
    nlohmann::json entry = {
        {"arena", p->arena == ArenaId::kMain ? "main" : "persistent"},
        {"offset", p->offset}};
    if (p->shares_with != -1) entry["shares_with"] = p->shares_with;
    offsets.push_back(entry);
  }
  return offsets;
}

void PrintTable(const ArenaFlags& flags, const ArenaPlanner& planner,
                uint64_t lower_bound) {
  const ArenaGraph& graph = planner.graph();
  std::printf(
      "%s: %zu tensors, %zu nodes, planner %s\n", flags.input.c_str(),
      graph.tensors.size(), graph.nodes.size(),
      std::string(ArenaPlannerKindName(planner.options().planner)).c_str());
  std::printf("%6s  %-19s %12s  %-10s %12s  %s\n", "tensor", "type", "bytes",
              "arena", "offset", "live");
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const ArenaTensor& tensor = graph.tensors[t];
    std::optional<TensorPlacement> p = planner.Placement(t);
    const std::string type(AllocationTypeName(tensor.type));
    if (!p) {
      std::printf("%6zu  %-19s %12zu  %-10s %12s\n", t, type.c_str(),
                  tensor.bytes, "-", "null");
      continue;
    }
    std::string live = Lifetime(*p);
    if (p->shares_with != -1) {
      live += absl::StrFormat(" (shares tensor %d)", p->shares_with);
    }
    std::printf("%6zu  %-19s %12zu  %-10s %12zu  %s\n", t, type.c_str(),
                tensor.bytes,
                p->arena == ArenaId::kMain ? "main" : "persistent", p->offset,
                live.c_str());
  }
  const double ratio =
      lower_bound == 0
          ? 1.0
          : static_cast<double>(planner.high_water_mark()) / lower_bound;
  std::printf(
      "main arena:       high-water mark %zu B (%s), buffer %zu B, lower bound "
      "%zu B, ratio %.4f\n",
      planner.high_water_mark(), HumanBytes(planner.high_water_mark()).c_str(),
      planner.buffer_bytes(), static_cast<size_t>(lower_bound), ratio);
  std::printf("persistent arena: high-water mark %zu B (%s), buffer %zu B\n",
              planner.persistent_high_water_mark(),
              HumanBytes(planner.persistent_high_water_mark()).c_str(),
              planner.persistent_buffer_bytes());
}

void Run(ArenaFlags& flags) {
  std::optional<ArenaPlannerKind> kind = ParseArenaPlannerKind(flags.planner);
  if (!kind) {
    Fail(kCommand, 2,
         absl::StrFormat("--strategy '%s': expected greedy or queue",
                         flags.planner));
  }
  ArenaPlannerOptions options{
      .planner = *kind,
      .preserve_inputs = flags.preserve_inputs,
      .preserve_intermediates = flags.preserve_intermediates,
      .preserve_all_tensors = flags.preserve_all_tensors,
      .tensor_alignment =
          ParseAlignment(flags.tensor_alignment, "--tensor-alignment"),
      .arena_alignment =
          ParseAlignment(flags.arena_alignment, "--arena-alignment"),
      // Plan with real addresses but never commit the arena's memory.
      .callbacks = ReservedAddressSpaceCallbacks()};
  ArenaGraph graph = ReadInput(flags);
  absl::StatusOr<std::unique_ptr<ArenaPlanner>> planner =
      ArenaPlanner::Create(&graph, options);
  if (!planner.ok()) Fail(kCommand, 2, std::string(planner.status().message()));
  absl::Status status = (*planner)->PlanAllocations();
  if (status.ok()) {
    const int last = std::max<int>(graph.nodes.size(), 1) - 1;
    status = (*planner)->ExecuteAllocations(0, last);
  }
  if (!status.ok()) {
    Fail(kCommand, 1, absl::StrFormat("%s: %s", flags.input, status.message()));
  }
  const BufferSet placed = ArenaPlanToBufferSet(**planner, ArenaId::kMain);
  const uint64_t lower_bound = PeakLiveBytes(placed);
  if (flags.json) {
    nlohmann::json json = {
        {"graph", flags.input},
        {"planner", ArenaPlannerKindName(*kind)},
        {"tensors", graph.tensors.size()},
        {"nodes", graph.nodes.size()},
        {"offsets", OffsetsJson(**planner)},
        {"high_water_mark", (*planner)->high_water_mark()},
        {"persistent_high_water_mark",
         (*planner)->persistent_high_water_mark()},
        {"buffer_bytes", (*planner)->buffer_bytes()},
        {"persistent_buffer_bytes", (*planner)->persistent_buffer_bytes()},
        {"lower_bound", lower_bound}};
    if (!flags.model_summary.is_null()) json["model"] = flags.model_summary;
    std::printf("%s\n", json.dump(2).c_str());
  } else {
    PrintTable(flags, **planner, lower_bound);
  }
  if (!flags.html.empty()) {
    const std::string title = absl::StrFormat(
        "%s, arena planner %s", flags.input, ArenaPlannerKindName(*kind));
    absl::Status written =
        WriteHtmlFile(flags.html, RenderPlanHtml(placed, title));
    if (!written.ok()) Fail(kCommand, 1, std::string(written.message()));
  }
}

}  // namespace

void AddArenaCommand(CLI::App& app) {
  auto flags = std::make_shared<ArenaFlags>();
  CLI::App* command = app.add_subcommand(
      "arena",
      "Place a graph's tensors in one arena as TFLite's interpreter does");
  command->footer(
      "Planners: greedy (current TFLite: largest first, interval-aware best "
      "fit,\nin-place sharing) and queue (TFLite 2018-2020: allocation events "
      "in order).\nA .csv input is a buffer set, planned as a graph with the "
      "same lifetimes;\na .onnx model is planned as its graph (docs/onnx.md)."
      "\n\n"
      "Examples:\n"
      "  tensormem arena data/graphs/mobilenet_v2_blocks.json\n"
      "  tensormem arena data/onnx/resnet50.onnx --fuse-activations --json\n"
      "  tensormem arena data/graphs/mobilenet_v2_blocks.json --strategy queue "
      "--preserve-inputs --json\n"
      "  tensormem arena data/models/resnet50.buffers.csv "
      "--tensor-alignment 1 --html plan.html");
  command
      ->add_option("graph", flags->input,
                   "Graph JSON, buffer set CSV or ONNX model (.onnx)")
      ->required();
  AddModelFlags(*command, flags->model);
  command->add_option("--strategy", flags->planner,
                      "greedy (default) or queue");
  AddFormerName(*command, "--planner", flags->planner);
  command->add_flag(
      "--preserve-inputs", flags->preserve_inputs,
      "queue: never free graph inputs (greedy always keeps them)");
  command->add_flag("--preserve-intermediates", flags->preserve_intermediates,
                    "queue: never free any tensor");
  command->add_flag("--preserve-all-tensors", flags->preserve_all_tensors,
                    "greedy: never free or share any tensor");
  command->add_option("--tensor-alignment", flags->tensor_alignment,
                      "Offsets are multiples of this (default 64)");
  command->add_option("--arena-alignment", flags->arena_alignment,
                      "Alignment of each arena's base (default 64)");
  command->add_flag("--json", flags->json,
                    "Print one JSON object instead of a table");
  command->add_option("--html", flags->html,
                      "Draw the main arena (time x address) as an HTML page");
  command->callback([flags] { Run(*flags); });
}

}  // namespace tensormem::cli
