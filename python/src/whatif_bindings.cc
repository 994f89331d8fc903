// tensormem._tensormem: what-if, one workload through several allocator
// candidates (tensormem/trace/whatif.h), and its text and HTML page.
#include <optional>
#include <string>

#include "bindings.h"
#include "pybind11/stl.h"
#include "tensormem/report/plan_html.h"
#include "tensormem/report/whatif_html.h"
#include "tensormem/report/whatif_text.h"
#include "tensormem/trace/whatif.h"

namespace tensormem::python {
namespace {

namespace py = pybind11;

// As `tensormem whatif --html` draws it.
constexpr size_t kTimelineSamples = 1000;

WhatIfResult RunOn(const py::object& source, int device,
                   const std::optional<std::string>& candidates,
                   std::optional<uint64_t> device_memory, bool min_limit,
                   bool timing) {
  TraceInput input;
  if (py::isinstance<Trace>(source)) {
    input.trace = source.cast<Trace>();
  } else {
    input = ReadSource(source, std::nullopt, device);
  }
  const PreparedTrace trace =
      ValueOrRaise(PreparedTrace::Prepare(std::move(input.trace)));
  const std::vector<WhatIfCandidate> parsed =
      candidates ? ValueOrRaise(ParseWhatIfCandidates(*candidates))
                 : DefaultWhatIfCandidates();
  WhatIfOptions options;
  options.device_memory = device_memory;
  options.min_limit = min_limit;
  options.measure_speed = timing;
  options.timeline_samples = kTimelineSamples;
  if (input.pytorch_details)
    options.recording = &input.pytorch_details->recording;
  absl::StatusOr<WhatIfResult> result;
  {
    py::gil_scoped_release release;
    result = RunWhatIf(trace, parsed, options);
  }
  return ValueOrRaise(std::move(result));
}

}  // namespace

void AddWhatIfBindings(py::module_& module) {
  py::class_<WhatIfResult>(module, "WhatIfResult",
                           "The comparison tensormem.whatif returns.")
      .def(
          "json",
          [](const WhatIfResult& result) {
            return ToPython(WhatIfToJson(result));
          },
          "Everything as `tensormem whatif --json` prints it.")
      .def("text", &RenderWhatIfText,
           "The table, the recorded row's check and the recommendation.")
      .def(
          "write_html",
          [](const WhatIfResult& result, const std::string& path,
             const std::string& title) {
            RaiseIfError(WriteHtmlFile(path, RenderWhatIfHtml(result, title)));
          },
          py::arg("path"), py::arg("title"));
  module.def("whatif", &RunOn, py::arg("source"), py::arg("device"),
             py::arg("candidates"), py::arg("device_memory"),
             py::arg("min_limit"), py::arg("timing"));
}

}  // namespace tensormem::python
