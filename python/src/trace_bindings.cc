// tensormem._tensormem: traces (reading any workload file, writing, building
// by hand, converting to buffers), replay into an allocator and the replay
// report.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bindings.h"
#include "pybind11/stl.h"
#include "pybind11/stl/filesystem.h"
#include "tensormem/core/units.h"
#include "tensormem/report/plan_html.h"
#include "tensormem/report/replay_html.h"
#include "tensormem/trace/importers.h"
#include "tensormem/trace/replay.h"
#include "tensormem/trace/replay_allocator.h"
#include "tensormem/trace/trace_input.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem::python {
namespace {

namespace py = pybind11;

constexpr size_t kReportTimelineSamples = 2000;

py::tuple ReadAnyTrace(const py::object& source,
                       const std::optional<std::string>& format, int device) {
  TraceInput input = ReadSource(source, format, device);
  py::dict details;
  details["format"] = std::string(TraceFormatName(input.format));
  if (input.pytorch_details) {
    details["device"] = device;
    details["devices"] = input.pytorch_details->devices;
    details["blocks_live_at_start"] =
        input.pytorch_details->blocks_live_at_start;
    details["entries_skipped"] = input.pytorch_details->entries_skipped;
  }
  return py::make_tuple(std::move(input.trace), details);
}

// Counts, and peak live bytes as the replay defines it (PreparedTrace).
py::dict Summary(const Trace& trace) {
  const PreparedTrace prepared = ValueOrRaise(PreparedTrace::Prepare(trace));
  int64_t allocs = 0, failed = 0, live = 0;
  for (const TraceEvent& event : trace.events) {
    if (event.op == TraceOp::kFree) {
      --live;
    } else if (event.failed) {
      ++failed;
    } else {
      ++allocs;
      ++live;
    }
  }
  py::dict summary;
  summary["events"] = trace.events.size();
  summary["allocs"] = allocs;
  summary["frees"] =
      static_cast<int64_t>(trace.events.size()) - allocs - failed;
  summary["failed_allocs"] = failed;
  summary["live_at_end"] = live;
  summary["peak_live_bytes"] = prepared.peak_live_bytes();
  return summary;
}

py::dict ToBuffers(const Trace& trace, bool closed) {
  const BufferSet set = ValueOrRaise(TraceToBufferSet(trace));
  std::vector<uint64_t> ids, sizes;
  std::vector<int64_t> starts, ends;
  for (const Buffer& buffer : set.buffers) {
    ids.push_back(buffer.id);
    sizes.push_back(buffer.size);
    starts.push_back(buffer.lower);
    ends.push_back(closed ? buffer.upper - 1 : buffer.upper);
  }
  py::dict out;
  out["ids"] = ids;
  out["sizes"] = sizes;
  out["starts"] = starts;
  out["ends"] = ends;
  return out;
}

void AddAlloc(Trace& trace, uint64_t id, int64_t bytes, int64_t alignment) {
  if (bytes < 0 || alignment < 0 || alignment > UINT32_MAX) {
    Raise(absl::StatusCode::kInvalidArgument,
          absl::StrCat("alloc of id ", id, ": bytes (", bytes,
                       ") and alignment (", alignment, ") must be >= 0"));
  }
  TraceEvent event = TraceEvent::Alloc(id, static_cast<uint64_t>(bytes));
  event.alignment = static_cast<uint32_t>(alignment);
  trace.events.push_back(event);
}

uint64_t ByteSize(const py::handle& value, const std::string& key) {
  if (py::isinstance<py::str>(value)) {
    absl::StatusOr<uint64_t> parsed = ParseByteSize(value.cast<std::string>());
    if (!parsed.ok()) {
      Raise(absl::StatusCode::kInvalidArgument,
            absl::StrCat(key, ": ", parsed.status().message()));
    }
    return *parsed;
  }
  const int64_t bytes = value.cast<int64_t>();
  if (bytes < 0) {
    Raise(absl::StatusCode::kInvalidArgument,
          absl::StrCat(key, " is negative (", bytes, ")"));
  }
  return static_cast<uint64_t>(bytes);
}

}  // namespace

TraceInput ReadSource(const py::object& source,
                      const std::optional<std::string>& format, int device) {
  if (py::isinstance<py::bytes>(source)) {
    if (format && *format != "pytorch") {
      Raise(
          absl::StatusCode::kInvalidArgument,
          "a snapshot dict is read as format 'pytorch', not '" + *format + "'");
    }
    PytorchImport read = ValueOrRaise(ParsePytorchSnapshot(
        source.cast<std::string>(), kSnapshotDictSource, {.device = device}));
    TraceInput input;
    input.format = TraceFormat::kPytorch;
    input.trace = std::move(read.trace);
    read.trace = Trace();
    input.pytorch_details = std::move(read);
    return input;
  }
  TraceInputOptions options{.device = device};
  if (format) options.format = ValueOrRaise(ParseTraceFormat(*format));
  return ValueOrRaise(ReadTraceInput(source.cast<std::string>(), options));
}

AllocatorSpec SpecFromDict(const py::dict& options) {
  AllocatorSpec config;
  for (const auto& [key_handle, value] : options) {
    const std::string key = key_handle.cast<std::string>();
    if (value.is_none()) continue;
    std::string text;
    if (py::isinstance<py::bool_>(value)) {
      text = value.cast<bool>() ? "true" : "false";
    } else if (py::isinstance<py::int_>(value)) {
      text = std::to_string(ByteSize(value, key));
    } else {
      text = py::str(value).cast<std::string>();
    }
    RaiseIfError(SetAllocatorOption(config, key, text));
  }
  return config;
}

namespace {

py::dict ReplayTrace(const Trace& trace, const py::dict& options, bool timing) {
  const AllocatorSpec config = SpecFromDict(options);
  const PreparedTrace prepared = ValueOrRaise(PreparedTrace::Prepare(trace));
  ReplayTarget target = ValueOrRaise(CreateReplayTarget(config));
  absl::StatusOr<ReplayResult> replayed;
  {
    py::gil_scoped_release release;
    replayed = Replay(prepared, target, {});
  }
  ReplayResult result = ValueOrRaise(std::move(replayed));
  if (timing) {
    ReplayTarget fresh = ValueOrRaise(CreateReplayTarget(config));
    py::gil_scoped_release release;
    TimeReplay(prepared, fresh, result.metrics);
  }
  nlohmann::json json = ReplayMetricsToJson(result.metrics);
  json["allocator_config"] = DescribeAllocator(config);
  return ToPython(json);
}

py::dict WriteReplayReport(const Trace& trace, const std::string& path,
                           const std::string& title, const py::dict& options) {
  const AllocatorSpec config = SpecFromDict(options);
  const PreparedTrace prepared = ValueOrRaise(PreparedTrace::Prepare(trace));
  ReplayTarget target = ValueOrRaise(CreateReplayTarget(config));
  const ReplayResult result =
      ValueOrRaise(Replay(prepared, target,
                          {.record_placement = true,
                           .max_timeline_samples = kReportTimelineSamples}));
  const std::string description = DescribeAllocator(config);
  RaiseIfError(
      WriteHtmlFile(path, RenderReplayHtml(result, title, description)));
  nlohmann::json json = ReplayMetricsToJson(result.metrics);
  json["allocator_config"] = description;
  return ToPython(json);
}

}  // namespace

void AddTraceBindings(py::module_& module) {
  py::class_<Trace>(module, "Trace",
                    "An allocation workload: alloc and free events in order.")
      .def(py::init<>(), "An empty trace; add events with alloc() and free().")
      .def("__len__", [](const Trace& trace) { return trace.events.size(); })
      .def("alloc", &AddAlloc, py::arg("id"), py::arg("bytes"),
           py::arg("alignment") = 0,
           "Appends the allocation of block `id` (alignment 0: the "
           "allocator's default).")
      .def(
          "free",
          [](Trace& trace, uint64_t id) {
            trace.events.push_back(TraceEvent::Free(id));
          },
          py::arg("id"), "Appends the free of block `id`.")
      .def("summary", &Summary,
           "events, allocs, frees, failed_allocs, live_at_end and "
           "peak_live_bytes, counted as the replay counts them; ValueError "
           "when a free names no live block.")
      .def("to_buffers", &ToBuffers, py::arg("closed") = false,
           "ids, sizes, starts, ends: block i lives from event starts[i] to "
           "ends[i] (exclusive; inclusive with closed=True).")
      .def(
          "write",
          [](const Trace& trace, const std::filesystem::path& path) {
            RaiseIfError(WriteTrace(trace, path.string()));
          },
          py::arg("path"),
          "Writes the .trace text (gzip-compressed when the path ends in .gz).")
      .def("text", &FormatTrace, "The .trace text.");
  module.def(
      "trace_from_buffers",
      [](const std::vector<int64_t>& sizes, const std::vector<int64_t>& starts,
         const std::vector<int64_t>& ends) {
        return ValueOrRaise(
            BufferSetToTrace(MakeBufferSet(sizes, starts, ends)));
      },
      py::arg("sizes"), py::arg("starts"), py::arg("ends"));
  module.def("read_trace", &ReadAnyTrace, py::arg("source"), py::arg("format"),
             py::arg("device"));
  module.def("replay", &ReplayTrace, py::arg("trace"), py::arg("options"),
             py::arg("timing"));
  module.def("write_replay_report", &WriteReplayReport, py::arg("trace"),
             py::arg("path"), py::arg("title"), py::arg("options"));
}

}  // namespace tensormem::python
