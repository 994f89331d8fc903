// tensormem._tensormem: the static planners (strategy registry) and the plan
// picture.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bindings.h"
#include "pybind11/stl.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/strategy_registry.h"
#include "tensormem/report/plan_html.h"

namespace tensormem::python {

namespace py = pybind11;

BufferSet MakeBufferSet(const std::vector<int64_t>& sizes,
                        const std::vector<int64_t>& starts,
                        const std::vector<int64_t>& ends,
                        const std::vector<int64_t>* offsets) {
  if (starts.size() != sizes.size() || ends.size() != sizes.size() ||
      (offsets != nullptr && offsets->size() != sizes.size())) {
    Raise(
        absl::StatusCode::kInvalidArgument,
        absl::StrCat("sizes, starts, ends", offsets ? ", offsets" : "",
                     " must have the same length (got ", sizes.size(), ", ",
                     starts.size(), ", ", ends.size(),
                     offsets ? absl::StrCat(", ", offsets->size()) : "", ")"));
  }
  BufferSet set;
  set.buffers.reserve(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0) {
      Raise(absl::StatusCode::kInvalidArgument,
            absl::StrCat("sizes[", i, "] is negative (", sizes[i], ")"));
    }
    if (offsets != nullptr && (*offsets)[i] < 0) {
      Raise(absl::StatusCode::kInvalidArgument,
            absl::StrCat("offsets[", i, "] is negative (", (*offsets)[i], ")"));
    }
    Buffer buffer{.id = i,
                  .lower = starts[i],
                  .upper = ends[i],
                  .size = static_cast<uint64_t>(sizes[i])};
    if (offsets != nullptr) buffer.offset = (*offsets)[i];
    set.buffers.push_back(buffer);
  }
  return set;
}

namespace {

void RequireOffsetsStrategy(const std::string& name) {
  const StrategyInfo* strategy = FindStrategy(name);
  if (strategy != nullptr) return;
  std::vector<std::string> known;
  for (const StrategyInfo* info : ListStrategies(PlanMode::kOffsets)) {
    known.push_back(info->name);
  }
  Raise(absl::StatusCode::kInvalidArgument,
        absl::StrCat("unknown strategy '", name,
                     "' (known: ", absl::StrJoin(known, ", "), ")"));
}

py::dict Plan(const std::vector<int64_t>& sizes,
              const std::vector<int64_t>& starts,
              const std::vector<int64_t>& ends, const std::string& strategy,
              std::optional<double> time_limit, int64_t alignment, int threads,
              bool allow_slow, bool counted_time) {
  RequireOffsetsStrategy(strategy);
  if (alignment <= 0) {
    Raise(absl::StatusCode::kInvalidArgument,
          absl::StrCat("alignment must be positive (got ", alignment, ")"));
  }
  if (time_limit && !(*time_limit > 0)) {
    Raise(absl::StatusCode::kInvalidArgument,
          absl::StrCat("time_limit must be positive (got ", *time_limit, ")"));
  }
  const BufferSet set = MakeBufferSet(sizes, starts, ends);
  PlanOptions options{.alignment = static_cast<uint64_t>(alignment),
                      .allow_slow = allow_slow,
                      .time_limit_seconds = time_limit,
                      .threads = threads,
                      .counted_time = counted_time};
  absl::StatusOr<PlanResult> planned;
  {
    py::gil_scoped_release release;  // the optimal search may run for seconds
    planned = RunStrategy(strategy, set, PlanMode::kOffsets, options);
  }
  const PlanResult result = ValueOrRaise(std::move(planned));
  py::dict extra;
  for (const auto& [key, value] : result.extra) {
    extra[py::str(key)] = ToPython(value);
  }
  py::dict out;
  out["strategy"] = result.strategy;
  out["offsets"] = result.offsets;
  out["total"] = result.total_size;
  out["lower_bound"] = result.lower_bound;
  out["seconds"] = result.seconds;
  out["extra"] = extra;
  return out;
}

std::vector<std::pair<std::string, std::string>> Strategies() {
  std::vector<std::pair<std::string, std::string>> names;
  for (const StrategyInfo* info : ListStrategies(PlanMode::kOffsets)) {
    names.emplace_back(info->name, info->description);
  }
  return names;
}

void WritePlanReport(const std::string& path, const std::vector<int64_t>& sizes,
                     const std::vector<int64_t>& starts,
                     const std::vector<int64_t>& ends,
                     const std::vector<int64_t>& offsets,
                     const std::string& title) {
  const BufferSet set = MakeBufferSet(sizes, starts, ends, &offsets);
  RaiseIfError(CheckPlacement(set));
  RaiseIfError(WriteHtmlFile(path, RenderPlanHtml(set, title)));
}

}  // namespace

void AddPlanBindings(py::module_& module) {
  module.def("plan", &Plan, py::arg("sizes"), py::arg("starts"),
             py::arg("ends"), py::arg("strategy"), py::arg("time_limit"),
             py::arg("alignment"), py::arg("threads"), py::arg("allow_slow"),
             py::arg("counted_time"));
  module.def("strategies", &Strategies);
  module.def("write_plan_report", &WritePlanReport, py::arg("path"),
             py::arg("sizes"), py::arg("starts"), py::arg("ends"),
             py::arg("offsets"), py::arg("title"));
}

}  // namespace tensormem::python
