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
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/sub_allocator_registry.h"
#include "tensormem/trace/replay.h"

namespace tensormem::python {
namespace {

namespace py = pybind11;

class PyBfcAllocator {
 public:
  PyBfcAllocator(uint64_t memory_limit, bool allow_growth,
                 bool garbage_collection, const std::string& sub_allocator,
                 std::optional<uint64_t> capacity) {
    if (memory_limit == 0) {
      Raise(absl::StatusCode::kInvalidArgument, "memory_limit must be > 0");
    }
    SubAllocatorParams params;
    params.capacity = capacity.value_or(memory_limit);
    std::unique_ptr<SubAllocator> upstream =
        ValueOrRaise(CreateSubAllocator(sub_allocator, params));
    base_ = static_cast<const char*>(upstream->BaseAddress());
    BfcAllocator::Options options;
    options.allow_growth = allow_growth;
    options.garbage_collection = garbage_collection;
    // One Python thread: waiting for another thread's free would only hang.
    options.allow_retry_on_failure = false;
    options.log_failures = false;
    allocator_ = std::make_unique<BfcAllocator>(std::move(upstream),
                                                memory_limit, options);
  }

  uint64_t Alloc(int64_t bytes, int64_t alignment) {
    if (bytes <= 0 || alignment <= 0 || (alignment & (alignment - 1)) != 0) {
      Raise(absl::StatusCode::kInvalidArgument,
            absl::StrCat("alloc(", bytes, ", alignment=", alignment,
                         "): bytes must be > 0 and alignment a power of two"));
    }
    void* block = allocator_->Allocate(static_cast<size_t>(bytes),
                                       static_cast<size_t>(alignment));
    if (block == nullptr) {
      Raise(absl::StatusCode::kResourceExhausted,
            allocator_->LastFailureReport());
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
    return ToPython(allocator_->RecordMemoryDump().ToJson());
  }
  std::string DumpText() const {
    return allocator_->RecordMemoryDump().ToText();
  }
  void ResetPeak() { allocator_->ClearStats(); }

 private:
  uint64_t Handle(const void* block) const {
    return base_ != nullptr
               ? static_cast<uint64_t>(static_cast<const char*>(block) - base_)
               : reinterpret_cast<uintptr_t>(block);
  }

  const char* base_ = nullptr;
  std::unique_ptr<BfcAllocator> allocator_;
};

}  // namespace

void AddAllocBindings(py::module_& module) {
  py::class_<PyBfcAllocator>(module, "BfcAllocator")
      .def(py::init<uint64_t, bool, bool, const std::string&,
                    std::optional<uint64_t>>(),
           py::arg("memory_limit"), py::arg("allow_growth"),
           py::arg("garbage_collection"), py::arg("sub_allocator"),
           py::arg("capacity"))
      .def("alloc", &PyBfcAllocator::Alloc, py::arg("bytes"),
           py::arg("alignment"))
      .def("free", &PyBfcAllocator::Free, py::arg("block"))
      .def("allocated_size", &PyBfcAllocator::Size, py::arg("block"))
      .def("stats", &PyBfcAllocator::Stats)
      .def("dump", &PyBfcAllocator::Dump)
      .def("dump_text", &PyBfcAllocator::DumpText)
      .def("reset_peak", &PyBfcAllocator::ResetPeak);
}

}  // namespace tensormem::python
