// `tensormem plan`: static memory plans for a buffer set (design.md §3.2).
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/failure.h"
#include "cli/model_input.h"
#include "cli/search_flags.h"
#include "nlohmann/json.hpp"
#include "tensormem/core/checked_math.h"
#include "tensormem/core/file_io.h"
#include "tensormem/core/units.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/strategy_comparison.h"
#include "tensormem/plan/strategy_registry.h"
#include "tensormem/report/plan_html.h"

namespace tensormem::cli {
namespace {

// Estimates above this are announced on stderr before a strategy runs.
constexpr double kAnnounceSeconds = 5;

struct PlanFlags {
  std::string input;
  std::string strategy;
  bool objects = false;
  bool offsets = false;  // the default; the flag exists for explicitness
  std::string align = "1";
  bool check = false;
  bool json = false;
  bool force = false;
  std::string out;
  std::string html;
  SearchFlags search;            // for search strategies (`optimal`)
  ModelFlags model;              // .onnx inputs
  nlohmann::json model_summary;  // set when the input was a model
};

constexpr std::string_view kCommand = "plan";

PlanMode Mode(const PlanFlags& flags) {
  return flags.objects ? PlanMode::kObjects : PlanMode::kOffsets;
}

void PrintJson(const nlohmann::json& json) {
  std::printf("%s\n", json.dump(2).c_str());
}

// The input set with the plan's offsets (offsets mode) or object ids.
BufferSet Placed(const BufferSet& set, const PlanResult& plan) {
  BufferSet placed = set;
  for (size_t i = 0; i < placed.buffers.size(); ++i)
    placed.buffers[i].offset = plan.offsets[i];
  return placed;
}

void WriteHtml(const std::string& path, const BufferSet& placed,
               const std::string& title) {
  absl::Status written = WriteHtmlFile(path, RenderPlanHtml(placed, title));
  if (!written.ok()) Fail(kCommand, written);
}

void WriteOutputs(const PlanFlags& flags, const BufferSet& set,
                  const PlanResult& plan) {
  if (!flags.out.empty()) {
    std::string csv;
    if (plan.mode == PlanMode::kObjects) {
      BufferSet without_offsets = set;
      for (Buffer& b : without_offsets.buffers) b.offset.reset();
      ExtraColumn object{"object", {}};
      for (size_t id : plan.objects.object_ids)
        object.values.push_back(static_cast<int64_t>(id));
      csv = FormatBufferSetCsv(without_offsets, {object});
    } else {
      csv = FormatBufferSetCsv(Placed(set, plan));
    }
    if (absl::Status written = WriteTextFile(flags.out, csv); !written.ok()) {
      Fail(kCommand, written);
    }
  }
  if (!flags.html.empty()) {
    WriteHtml(flags.html, Placed(set, plan),
              absl::StrFormat("%s, %s (%s)", flags.input, plan.strategy,
                              PlanModeName(plan.mode)));
  }
}

nlohmann::json Summary(const PlanResult& plan) {
  nlohmann::json json = {
      {"strategy", plan.strategy},     {"mode", PlanModeName(plan.mode)},
      {"total_size", plan.total_size}, {"lower_bound", plan.lower_bound},
      {"ratio", plan.Ratio()},         {"seconds", plan.seconds}};
  if (plan.mode == PlanMode::kObjects)
    json["num_objects"] = plan.objects.object_sizes.size();
  for (const auto& [key, value] : plan.extra) json[key] = value;
  return json;
}

void CheckGivenOffsets(const PlanFlags& flags, const BufferSet& set,
                       uint64_t alignment) {
  const absl::Status valid = CheckPlacement(set, alignment);
  uint64_t height = 0;
  for (const Buffer& b : set.buffers) {
    if (b.offset)
      height =
          std::max(height, CheckedAdd(*b.offset, b.size).value_or(UINT64_MAX));
  }
  const uint64_t bound = PeakLiveBytes(set);
  const double ratio = bound == 0 ? 1.0 : static_cast<double>(height) / bound;
  if (flags.json) {
    nlohmann::json json = {
        {"valid", valid.ok()},  {"buffers", set.buffers.size()},
        {"total_size", height}, {"lower_bound", bound},
        {"ratio", ratio},       {"alignment", alignment}};
    if (!valid.ok()) json["error"] = std::string(valid.message());
    PrintJson(json);
  } else if (valid.ok()) {
    std::printf(
        "valid placement: %zu buffers, total %s (%llu B), lower bound %s, "
        "ratio %.4f\n",
        set.buffers.size(), HumanBytes(height).c_str(),
        static_cast<unsigned long long>(height), HumanBytes(bound).c_str(),
        ratio);
  }
  if (!flags.html.empty() && valid.ok())
    WriteHtml(flags.html, set, flags.input + " (given offsets)");
  if (!valid.ok())
    Fail(kCommand, 1,
         absl::StrFormat("%s: invalid placement: %s", flags.input,
                         valid.message()));
}

void AnnounceIfSlow(const StrategyInfo& strategy, const ProblemSize& size,
                    bool json) {
  const double seconds = EstimateSeconds(strategy, size);
  if (seconds > kAnnounceSeconds && !json) {
    std::fprintf(stderr,
                 "note: %s is estimated to take about %.0f s on %zu buffers\n",
                 strategy.name.c_str(), seconds, size.buffers);
  }
}

void PrintTableHeader(const StrategyComparison& table) {
  std::printf("%zu buffers, %s, lower bound %s (%llu B)\n", table.buffers,
              PlanModeName(table.mode).data(),
              HumanBytes(table.lower_bound).c_str(),
              static_cast<unsigned long long>(table.lower_bound));
  std::printf("%-20s %18s %10s %10s\n", "strategy", "total_size", "ratio",
              "seconds");
}

void PrintRow(const StrategyComparison::Entry& entry) {
  if (!entry.plan) {
    std::printf("%-20s skipped: %s\n", entry.strategy.c_str(),
                entry.skipped.c_str());
    return;
  }
  std::printf("%-20s %18llu %10.4f %10.4f\n", entry.strategy.c_str(),
              static_cast<unsigned long long>(entry.plan->total_size),
              entry.plan->Ratio(), entry.plan->seconds);
}

void RunAll(const PlanFlags& flags, const BufferSet& set,
            const PlanOptions& options) {
  const PlanMode mode = Mode(flags);
  ComparisonCallbacks callbacks;
  callbacks.before_each = [&flags](const StrategyInfo& strategy,
                                   const ProblemSize& size) {
    AnnounceIfSlow(strategy, size, flags.json);
  };
  if (!flags.json) {
    callbacks.on_start = PrintTableHeader;
    callbacks.after_each = PrintRow;
  }
  absl::StatusOr<StrategyComparison> table =
      CompareStrategies(set, mode, options, callbacks);
  if (!table.ok()) Fail(kCommand, table.status());
  const PlanResult* best =
      table->best ? &*table->entries[*table->best].plan : nullptr;
  if (flags.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const StrategyComparison::Entry& entry : table->entries) {
      rows.push_back(entry.plan ? Summary(*entry.plan)
                                : nlohmann::json{{"strategy", entry.strategy},
                                                 {"skipped", entry.skipped}});
    }
    nlohmann::json json = {{"mode", PlanModeName(mode)},
                           {"buffers", table->buffers},
                           {"lower_bound", table->lower_bound},
                           {"strategies", rows}};
    if (best) json["best"] = best->strategy;
    if (!flags.model_summary.is_null()) json["model"] = flags.model_summary;
    PrintJson(json);
  } else if (best) {
    std::printf("best: %s (%s)\n", best->strategy.c_str(),
                HumanBytes(best->total_size).c_str());
  }
  if (best) WriteOutputs(flags, set, *best);
}

void RunOne(const PlanFlags& flags, const BufferSet& set,
            const PlanOptions& options) {
  const PlanMode mode = Mode(flags);
  const StrategyInfo* strategy = FindStrategy(flags.strategy);
  if (strategy == nullptr) {
    std::vector<std::string> names;
    for (const StrategyInfo* info : ListStrategies(PlanMode::kOffsets))
      names.push_back(info->name);
    Fail(kCommand, 2,
         absl::StrFormat("unknown strategy '%s'; known: %s, all",
                         flags.strategy, absl::StrJoin(names, ", ")));
  }
  absl::StatusOr<std::vector<UsageRecord<>>> records = ToUsageRecords(set);
  if (!records.ok()) Fail(kCommand, records.status());
  AnnounceIfSlow(*strategy, MeasureProblem(*records, mode), flags.json);
  absl::StatusOr<PlanResult> plan =
      RunStrategy(flags.strategy, set, mode, options);
  if (!plan.ok()) {
    const bool usage =
        plan.status().code() == absl::StatusCode::kInvalidArgument &&
        mode == PlanMode::kObjects && !strategy->objects;
    Fail(kCommand, usage ? 2 : 1, plan.status().message());
  }
  if (flags.json) {
    nlohmann::json json = Summary(*plan);
    json["buffers"] = set.buffers.size();
    if (!flags.model_summary.is_null()) json["model"] = flags.model_summary;
    if (mode == PlanMode::kObjects) {
      json["objects"] = {{"ids", plan->objects.object_ids},
                         {"sizes", plan->objects.object_sizes}};
    } else {
      json["offsets"] = plan->offsets;
    }
    PrintJson(json);
  } else {
    std::printf("%-12s %s\n", "strategy", plan->strategy.c_str());
    std::printf("%-12s %s\n", "mode", PlanModeName(mode).data());
    std::printf("%-12s %zu\n", "buffers", set.buffers.size());
    if (mode == PlanMode::kObjects) {
      std::printf("%-12s %zu\n", "objects", plan->objects.object_sizes.size());
    }
    std::printf("%-12s %s (%llu B)\n", "total_size",
                HumanBytes(plan->total_size).c_str(),
                static_cast<unsigned long long>(plan->total_size));
    std::printf("%-12s %s (%llu B)\n", "lower_bound",
                HumanBytes(plan->lower_bound).c_str(),
                static_cast<unsigned long long>(plan->lower_bound));
    std::printf("%-12s %.4f\n", "ratio", plan->Ratio());
    std::printf("%-12s %.4f\n", "seconds", plan->seconds);
    for (const auto& [key, value] : plan->extra) {
      std::printf("%-12s %s\n", key.c_str(),
                  value.is_string() ? value.get<std::string>().c_str()
                                    : value.dump().c_str());
    }
  }
  WriteOutputs(flags, set, *plan);
}

// A buffer set CSV, or a model's intermediates.
BufferSet ReadInput(PlanFlags& flags) {
  if (!IsModelInput(flags.input)) {
    absl::StatusOr<BufferSet> set = ReadBufferSetCsv(flags.input);
    if (!set.ok()) Fail(kCommand, set.status());
    return *std::move(set);
  }
  int exit_code = 1;
  absl::StatusOr<LoadedModel> model =
      LoadModelInput(flags.input, flags.model, exit_code);
  if (!model.ok()) Fail(kCommand, exit_code, model.status().message());
  if (!flags.json) std::printf("%s\n", model->summary_line.c_str());
  flags.model_summary = model->summary;
  return std::move(model->buffers);
}

void Run(PlanFlags& flags) {
  absl::StatusOr<uint64_t> alignment = ParseByteSize(flags.align);
  if (!alignment.ok() || *alignment == 0) {
    Fail(kCommand, 2,
         absl::StrFormat("--align '%s' must be a positive byte count",
                         flags.align));
  }
  const BufferSet set = ReadInput(flags);
  if (flags.check) {
    CheckGivenOffsets(flags, set, *alignment);
    return;
  }
  PlanOptions options;
  options.alignment = *alignment;
  options.allow_slow = flags.force;
  ApplySearchFlags(kCommand, flags.search, options);
  if (flags.strategy == "all") {
    RunAll(flags, set, options);
  } else {
    RunOne(flags, set, options);
  }
}

// The registry's strategies, one line each, for --help.
std::string StrategyList() {
  std::string list = "Strategies (the modes they plan in):\n";
  for (const StrategyInfo* info : ListStrategies(PlanMode::kOffsets)) {
    absl::StrAppendFormat(&list, "  %-18s %-17s %s\n", info->name,
                          info->objects ? "offsets, objects" : "offsets",
                          info->description);
  }
  return list;
}

}  // namespace

void AddPlanCommand(CLI::App& app) {
  auto flags = std::make_shared<PlanFlags>();
  CLI::App* command =
      app.add_subcommand("plan",
                         "Plan static memory for a buffer set: offsets in one "
                         "arena or shared objects");
  command->footer(
      StrategyList() +
      "\nExamples:\n"
      "  tensormem plan data/models/resnet50.buffers.csv --strategy all\n"
      "  tensormem plan data/models/resnet18.buffers.csv --strategy "
      "greedy_best --objects --json\n"
      "  tensormem plan data/models/resnet18.buffers.csv --align 64 "
      "--out plan.csv --html plan.html\n"
      "  tensormem plan tests/data/plan/resnet18.offsets.csv --check\n"
      "  tensormem plan data/models/vit_b_16.buffers.csv "
      "--strategy optimal --time-limit 5s --threads 2\n"
      "  tensormem plan data/onnx/mobilenet_v2.onnx "
      "--fuse-activations --strategy all");
  command
      ->add_option("input", flags->input,
                   "Buffer set CSV (id,lower,upper,size or "
                   "id,first_task,last_task,size; optional offset), or an "
                   "ONNX model (.onnx: its intermediates)")
      ->required();
  AddModelFlags(*command, flags->model);
  command->add_option(
      "--strategy,-s", flags->strategy,
      "Strategy name, or 'all' for a comparison table "
      "(default: best_fit_multi for offsets, greedy_best for objects)");
  CLI::Option* objects = command->add_flag(
      "--objects", flags->objects, "Plan shared objects (TFLite GPU style)");
  command
      ->add_flag("--offsets", flags->offsets,
                 "Plan offsets in one arena (the default)")
      ->excludes(objects);
  command->add_option(
      "--align", flags->align,
      "Offsets are multiples of this many bytes, e.g. 64 or 4K (default 1)");
  command->add_flag("--check", flags->check,
                    "Validate the input's offset column instead of planning");
  command->add_flag("--json", flags->json,
                    "Print one JSON object instead of a table");
  command->add_flag(
      "--force", flags->force,
      "Run strategies even when they are estimated to take minutes");
  command->add_option("--out,-o", flags->out,
                      "Write the plan as CSV (input columns + offset or "
                      "object)");
  command->add_option("--html", flags->html,
                      "Draw the plan (time x address) as an HTML page");
  AddSearchFlags(*command, flags->search);
  command->callback([flags] {
    if (flags->strategy.empty())
      flags->strategy = flags->objects ? "greedy_best" : "best_fit_multi";
    Run(*flags);
  });
}

}  // namespace tensormem::cli
