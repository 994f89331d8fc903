// tensormem._tensormem: the BFC allocator as an object, for experiments.
//
// Blocks are named by integers: the offset from the start of the upstream's
// address range when it has one (the simulated and vmm sub-allocators), else
// the address itself (host memory).
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "bindings.h"
#include "pybind11/stl.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/trace/replay.h"

namespace tensormem::python {
namespace {

namespace py = pybind11;

class PyBfcAllocator {
 public:
  // `options`: the allocator specification's keys (policy, config,
  // sub_allocator, memory_limit, capacity, growth, gc, ...).
  explicit PyBfcAllocator(const py::dict& options) {
    const AllocatorSpec spec = SpecFromDict(options);
    if (spec.kind != "bfc") {
      Raise(absl::StatusCode::kInvalidArgument,
            absl::StrCat("BfcAllocator: allocator '", spec.kind,
                         "' is not a BFC allocator"));
    }
    BfcAllocator::Options bfc_options;
    // One Python thread: waiting for another thread's free would only hang.
    bfc_options.allow_retry_on_failure = false;
    bfc_options.log_failures = false;
    built_ = ValueOrRaise(CreateAllocator(spec, bfc_options));
    allocator_ = built_.allocator.get();
    base_ = static_cast<const char*>(built_.bfc->upstream().BaseAddress());
  }

  uint64_t Alloc(int64_t bytes, int64_t alignment, int32_t stream) {
    if (bytes <= 0 || alignment <= 0 || (alignment & (alignment - 1)) != 0) {
      Raise(absl::StatusCode::kInvalidArgument,
            absl::StrCat("alloc(", bytes, ", alignment=", alignment,
                         "): bytes must be > 0 and alignment a power of two"));
    }
    void* block = allocator_->Allocate(static_cast<size_t>(bytes),
                                       static_cast<size_t>(alignment), stream);
    if (block == nullptr) {
      Raise(absl::StatusCode::kResourceExhausted,
            built_.bfc->LastFailureReport());
    }
    return Handle(block);
  }

  void Free(uint64_t handle) {
    void* block = base_ != nullptr ? const_cast<char*>(base_ + handle)
                                   : reinterpret_cast<void*>(handle);
    const absl::Status freed = allocator_->CheckedDeallocate(block);
    if (!freed.ok()) {
      Raise(absl::StatusCode::kInvalidArgument,
            absl::StrCat("free(", handle, "): ", freed.message()));
    }
  }

  std::optional<uint64_t> Size(uint64_t handle) const {
    std::optional<size_t> size = allocator_->AllocatedSize(
        base_ != nullptr ? base_ + handle : reinterpret_cast<void*>(handle));
    return size ? std::optional<uint64_t>(*size) : std::nullopt;
  }

  py::object Stats() const {
    return ToPython(AllocatorStatsToJson(*allocator_->GetStats()));
  }
  py::object Dump() const {
    return ToPython(built_.bfc->RecordMemoryDump().ToJson());
  }
  std::string Policy() const { return built_.bfc->PolicyDescription(); }
  std::string DumpText() const {
    return built_.bfc->RecordMemoryDump().ToText();
  }
  void ResetPeak() { allocator_->ClearStats(); }
  void MarkIteration() { allocator_->MarkIteration(); }

 private:
  uint64_t Handle(const void* block) const {
    return base_ != nullptr
               ? static_cast<uint64_t>(static_cast<const char*>(block) - base_)
               : reinterpret_cast<uintptr_t>(block);
  }

  BuiltAllocator built_;
  // built_.allocator: the BFC allocator, or the planned allocator over it
  // (built_.bfc, which dumps and explains failures).
  Allocator* allocator_ = nullptr;
  const char* base_ = nullptr;
};

}  // namespace

void AddAllocBindings(py::module_& module) {
  py::class_<PyBfcAllocator>(module, "BfcAllocator")
      .def(py::init<const py::dict&>(), py::arg("options"))
      .def("alloc", &PyBfcAllocator::Alloc, py::arg("bytes"),
           py::arg("alignment"), py::arg("stream"))
      .def("policy", &PyBfcAllocator::Policy)
      .def("free", &PyBfcAllocator::Free, py::arg("block"))
      .def("allocated_size", &PyBfcAllocator::Size, py::arg("block"))
      .def("stats", &PyBfcAllocator::Stats)
      .def("dump", &PyBfcAllocator::Dump)
      .def("dump_text", &PyBfcAllocator::DumpText)
      .def("reset_peak", &PyBfcAllocator::ResetPeak)
      .def("mark_iteration", &PyBfcAllocator::MarkIteration);
}

}  // namespace tensormem::python
