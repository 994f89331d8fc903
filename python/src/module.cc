// The `tensormem._tensormem` extension module; the `tensormem` package wraps
// it with documented, typed functions (python/tensormem/__init__.py).
#include <string>

#include "bindings.h"
#include "pybind11/pybind11.h"
#include "tensormem/core/units.h"
#include "tensormem/core/version.h"

namespace tensormem::python {

void Raise(absl::StatusCode code, const std::string& message) {
  PyObject* type = PyExc_RuntimeError;
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
      type = PyExc_ValueError;
      break;
    case absl::StatusCode::kNotFound:
      type = PyExc_FileNotFoundError;
      break;
    case absl::StatusCode::kResourceExhausted:
      type = PyExc_MemoryError;
      break;
    default:
      break;
  }
  PyErr_SetString(type, message.c_str());
  throw pybind11::error_already_set();
}

void RaiseIfError(const absl::Status& status) {
  if (!status.ok()) Raise(status.code(), std::string(status.message()));
}

pybind11::object ToPython(const nlohmann::json& value) {
  // The json module turns the library's own serialisation into Python values
  // exactly (64-bit integers included).
  static pybind11::object* loads =
      new pybind11::object(pybind11::module_::import("json").attr("loads"));
  return (*loads)(value.dump());
}

}  // namespace tensormem::python

PYBIND11_MODULE(_tensormem, module) {
  module.doc() = "tensormem's C++ library; use the `tensormem` package.";
  module.attr("__version__") = std::string(tensormem::kVersion);
  module.def(
      "parse_bytes",
      [](const std::string& text) {
        return tensormem::python::ValueOrRaise(tensormem::ParseByteSize(text));
      },
      pybind11::arg("text"));
  tensormem::python::AddPlanBindings(module);
  tensormem::python::AddTraceBindings(module);
  tensormem::python::AddAllocBindings(module);
  tensormem::python::AddWhatIfBindings(module);
}
