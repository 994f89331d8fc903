// Creating a sub-allocator from its name, for flags and config files.
//
//   absl::StatusOr<std::unique_ptr<tensormem::SubAllocator>> upstream =
//       tensormem::CreateSubAllocator("simulated", 80 * tensormem::kGiB,
//                                     /*coalescing=*/false);
//   if (!upstream.ok()) return upstream.status();  // e.g. unknown kind "cuda"
#ifndef TENSORMEM_ALLOC_SUB_ALLOCATOR_REGISTRY_H_
#define TENSORMEM_ALLOC_SUB_ALLOCATOR_REGISTRY_H_

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/alloc/sub_allocator.h"

namespace tensormem {

// The kinds CreateSubAllocator knows, in the order to show them in help.
std::vector<std::string_view> SubAllocatorKinds();

// Creates a sub-allocator of `kind`:
// - "host": aligned host memory; `capacity` is not used (the allocator on top
//   sets the limit); `coalescing` must be false (host regions never touch).
// - "simulated": `capacity` (> 0) bytes of address space; `coalescing` is what
//   it reports from SupportsCoalescing().
// - "vmm": `capacity` (> 0) bytes reserved, committed on demand; it always
//   coalesces, whatever `coalescing` says.
// Errors: an unknown kind (the message lists the known ones), a zero
// capacity, or an address space that cannot be reserved.
absl::StatusOr<std::unique_ptr<SubAllocator>> CreateSubAllocator(
    std::string_view kind, uint64_t capacity, bool coalescing);

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_SUB_ALLOCATOR_REGISTRY_H_
