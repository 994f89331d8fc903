// Shared pieces of the `tensormem._tensormem` extension module: turning the
// library's absl::Status into Python exceptions and its JSON into Python
// objects, and the functions that add each part of the API to the module.
#ifndef TENSORMEM_PYTHON_BINDINGS_H_
#define TENSORMEM_PYTHON_BINDINGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "pybind11/pybind11.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/trace/trace_input.h"

namespace tensormem::python {

// Raises the Python exception that fits `status.code()`, carrying its
// message: ValueError (invalid argument, out of range, failed precondition),
// FileNotFoundError (not found), MemoryError (resource exhausted),
// RuntimeError otherwise. Does nothing when `status` is OK.
void RaiseIfError(const absl::Status& status);

// Raises an exception of the type given by `code` with `message`.
[[noreturn]] void Raise(absl::StatusCode code, const std::string& message);

template <typename T>
T ValueOrRaise(absl::StatusOr<T> value) {
  RaiseIfError(value.status());
  return *std::move(value);
}

// Buffer i is sizes[i] bytes live in [starts[i], ends[i]), with id i;
// `offsets`, when given, places it. Raises ValueError when the lengths differ
// or a size or offset is negative (the library checks the lifetimes).
BufferSet MakeBufferSet(const std::vector<int64_t>& sizes,
                        const std::vector<int64_t>& starts,
                        const std::vector<int64_t>& ends,
                        const std::vector<int64_t>* offsets = nullptr);

// The JSON value as Python dicts, lists, ints, floats, strings and None.
pybind11::object ToPython(const nlohmann::json& value);

// How errors name a snapshot given as a dict (pickled by the package).
inline constexpr char kSnapshotDictSource[] = "snapshot dict";

// A workload from a path (any format ReadTraceInput reads; `format` unset:
// told from the name) or from bytes: a pickled PyTorch snapshot dict.
TraceInput ReadSource(const pybind11::object& source,
                      const std::optional<std::string>& format, int device);

// An allocator specification from keyword arguments: the specification's keys
// (allocator_spec.h; garbage_collection is accepted for gc), values as bools,
// byte counts or text. None leaves a key at its default.
AllocatorSpec SpecFromDict(const pybind11::dict& options);

void AddPlanBindings(pybind11::module_& module);
void AddTraceBindings(pybind11::module_& module);
void AddAllocBindings(pybind11::module_& module);
void AddWhatIfBindings(pybind11::module_& module);

}  // namespace tensormem::python

#endif  // TENSORMEM_PYTHON_BINDINGS_H_
