// AllocatorSpec: the one way to describe an allocator — kind, policy,
// sub-allocator, limit and options — shared by the CLI (`replay`, `report`,
// `bench`, `whatif`), the PyTorch plug-ins (TENSORMEM_* variables) and library
// users. Every option has one key; flags spell it `--key-with-dashes`, the
// environment `TENSORMEM_KEY`.
//
//   AllocatorSpec spec;
//   TM_RETURN_IF_ERROR(SetAllocatorOption(spec, "policy", "pytorch"));
//   TM_RETURN_IF_ERROR(
//       SetAllocatorOption(spec, "config", "expandable_segments:True"));
//   TM_ASSIGN_OR_RETURN(BuiltAllocator built, CreateAllocator(spec));
//   void* p = built.allocator->Allocate(4096);
#ifndef TENSORMEM_ALLOC_ALLOCATOR_SPEC_H_
#define TENSORMEM_ALLOC_ALLOCATOR_SPEC_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tensormem/alloc/allocator.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/alloc/sub_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {

// The address space a simulated or vmm sub-allocator reserves unless told
// otherwise. ThreadSanitizer keeps most of the address space for its shadow
// memory, so a TSan build reserves less.
#if defined(__SANITIZE_THREAD__)
inline constexpr uint64_t kDefaultCapacity = 64 * kGiB;
#else
inline constexpr uint64_t kDefaultCapacity = kTiB;
#endif

struct AllocatorSpec {
  std::string kind = "bfc";  // bfc | system
  std::string policy = std::string(kDefaultPolicy);
  std::string config;  // the policy's, in PYTORCH_CUDA_ALLOC_CONF syntax
  std::string sub_allocator = "simulated";
  // Address space of the simulated and vmm sub-allocators; raised to the
  // memory limit when that is larger.
  uint64_t capacity = kDefaultCapacity;
  // Default: `capacity`. For `system`, a limit wraps it in a LimitingAllocator.
  std::optional<uint64_t> memory_limit;
  bool growth = true;
  bool garbage_collection = false;
  double fragmentation_fraction = 0;  // tf policy, in [0, 1]
  // Whether the simulated sub-allocator extends regions contiguously. Unset:
  // yes, except under the tf policy (TensorFlow's regions never touch).
  std::optional<bool> coalescing;
  uint64_t granule = 2 * kMiB;  // growth unit of the tight policy
  int device = 0;               // for device sub-allocators
  // > 1: that many BFC allocators, each with its own upstream, sharing the
  // limit, threads spread over them (sharded_allocator.h).
  int shards = 1;
  // > 1: threads past the first get BFC pools of their own, sharing the
  // limit, up to this many pools in all (policies that allow it, over the
  // simulated or vmm sub-allocator; BfcAllocator::EnableThreadPools).
  int thread_pools = 4;

  friend bool operator==(const AllocatorSpec&, const AllocatorSpec&) = default;
};

// One option of the specification, for help texts and the environment.
struct AllocatorOptionInfo {
  std::string_view key;       // snake_case
  std::string_view accepted;  // what values it takes
  std::string_view help;
  // Another name accepted for the key (TensorFlow's and the Python API's
  // spelling, e.g. allow_growth for growth); empty if none.
  std::string_view alias = {};
};
const std::vector<AllocatorOptionInfo>& AllocatorOptions();

// The key `name` stands for: itself, or the key it is an alias of.
std::string_view CanonicalAllocatorOption(std::string_view name);

// Sets one option from text; `key` may be an alias. Errors name the key and
// what it accepts; an unknown key lists the known ones.
absl::Status SetAllocatorOption(AllocatorSpec& spec, std::string_view key,
                                std::string_view value);

// Reads TENSORMEM_<KEY> for every option through `getenv` (std::getenv in
// production, a map in tests) into `spec`; unset or empty variables leave it
// as is. Errors name the variable.
absl::Status ApplyAllocatorEnvironment(
    AllocatorSpec& spec, const std::function<const char*(const char*)>& getenv);

// Checks the combination (kind-specific options, ranges) without building.
absl::Status ValidateAllocatorSpec(const AllocatorSpec& spec);

// One line for tables and titles:
// "bfc(tight, simulated, limit 1.00TiB, growth)".
std::string DescribeAllocator(const AllocatorSpec& spec);

// An allocator built from a specification, with what reports need.
struct BuiltAllocator {
  // Allocators `allocator` wraps, if it does not own them; declared first so
  // they are destroyed after it.
  std::vector<std::unique_ptr<Allocator>> wrapped;
  std::unique_ptr<Allocator> allocator;
  // `allocator` when it is a BFC allocator, or the BFC allocator it serves
  // from (the planned policy, planned_allocator.h).
  BfcAllocator* bfc = nullptr;
};

// Builds the allocator. `options` are the BFC allocator's own (retry, misuse
// policy, logging, name); the specification fills growth, garbage collection
// and fragmentation fraction. Errors: those of ValidateAllocatorSpec, an
// unknown policy or sub-allocator, a bad policy configuration, or an address
// space that cannot be reserved.
absl::StatusOr<BuiltAllocator> CreateAllocator(
    const AllocatorSpec& spec, BfcAllocatorOptions options = {});

// CreateAllocator with `upstream` in place of the sub-allocator
// `spec.sub_allocator` names, for callers that decide where regions go (a
// snapshot replay puts them at the recorded addresses). Errors: those of
// CreateAllocator, or a kind other than one BFC allocator.
absl::StatusOr<BuiltAllocator> CreateAllocatorOver(
    const AllocatorSpec& spec, std::unique_ptr<SubAllocator> upstream,
    BfcAllocatorOptions options = {});

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_ALLOCATOR_SPEC_H_
