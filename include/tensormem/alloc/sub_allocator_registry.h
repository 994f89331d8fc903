// Creating a sub-allocator from its name, for flags, the environment and
// allocator specifications (allocator_spec.h).
//
//   SubAllocatorParams params;
//   params.capacity = 80 * kGiB;
//   absl::StatusOr<std::unique_ptr<SubAllocator>> upstream =
//       CreateSubAllocator("simulated", params);
//   if (!upstream.ok()) return upstream.status();  // e.g. an unknown kind
#ifndef TENSORMEM_ALLOC_SUB_ALLOCATOR_REGISTRY_H_
#define TENSORMEM_ALLOC_SUB_ALLOCATOR_REGISTRY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/alloc/sub_allocator.h"

namespace tensormem {

struct SubAllocatorParams {
  // Address space to reserve (simulated, vmm); 0 for kinds that need none.
  uint64_t capacity = 0;
  // Whether the simulated kind reports SupportsCoalescing() (other kinds
  // either always or never coalesce, and refuse a request they cannot honour).
  bool coalescing = false;
  int device = 0;  // for device kinds
};

// Whether a kind's regions extend earlier ones (SubAllocator::
// SupportsCoalescing), known before one is built, so that a specification
// asking what the kind cannot do fails when it is checked.
enum class RegionContiguity {
  kUnknown,  // found only once built
  kNever,
  kAlways,
  kChosen,  // SubAllocatorParams::coalescing
};

struct SubAllocatorInfo {
  std::string_view name;
  std::string_view summary;  // one line, for --help
  RegionContiguity contiguity = RegionContiguity::kUnknown;
};

// The kinds CreateSubAllocator knows, in the order to show them in help:
// - host: aligned host memory; never coalesces.
// - simulated: `capacity` (> 0) bytes of address space, never touched.
// - vmm: `capacity` (> 0) bytes reserved, committed on demand; always
//   coalesces.
std::vector<SubAllocatorInfo> SubAllocatorKinds();

// Whether a sub-allocator of `kind` built with `params` would coalesce;
// nullopt for an unknown kind or one that says only once built.
std::optional<bool> KindCoalesces(std::string_view kind,
                                  const SubAllocatorParams& params);

// Errors: an unknown kind (the message lists the known ones), parameters the
// kind cannot honour, or an address space that cannot be reserved.
absl::StatusOr<std::unique_ptr<SubAllocator>> CreateSubAllocator(
    std::string_view kind, const SubAllocatorParams& params);

using SubAllocatorFactory = absl::StatusOr<std::unique_ptr<SubAllocator>> (*)(
    const SubAllocatorParams& params);

// Adds a kind defined above the alloc layer (the CUDA kinds, registered by
// RegisterCudaSubAllocators() in tensormem/cuda). A name already known is
// left as it is. Synchronised with every other call here.
void RegisterSubAllocatorKind(SubAllocatorInfo info,
                              SubAllocatorFactory factory);

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_SUB_ALLOCATOR_REGISTRY_H_
