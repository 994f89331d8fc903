#include "tensormem/alloc/sub_allocator_registry.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tensormem/alloc/host_sub_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/alloc/vmm_sub_allocator.h"
#include "tensormem/core/named_registry.h"

namespace tensormem {
namespace {

using Factory = SubAllocatorFactory;

absl::Status RequireCapacity(std::string_view kind, uint64_t capacity) {
  if (capacity > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "sub-allocator '%s' needs a capacity > 0 bytes", std::string(kind)));
}

// A sub-allocator that reports a failed construction through status().
template <typename T>
absl::StatusOr<std::unique_ptr<SubAllocator>> Checked(std::unique_ptr<T> made) {
  if (!made->status().ok()) return made->status();
  return made;
}

absl::StatusOr<std::unique_ptr<SubAllocator>> MakeHost(
    const SubAllocatorParams& params) {
  if (params.coalescing) {
    return absl::InvalidArgumentError(
        "sub-allocator 'host' cannot coalesce: its regions are never "
        "contiguous");
  }
  return std::make_unique<HostSubAllocator>();
}

absl::StatusOr<std::unique_ptr<SubAllocator>> MakeSimulated(
    const SubAllocatorParams& params) {
  if (absl::Status status = RequireCapacity("simulated", params.capacity);
      !status.ok())
    return status;
  return Checked(std::make_unique<SimulatedSubAllocator>(params.capacity,
                                                         params.coalescing));
}

absl::StatusOr<std::unique_ptr<SubAllocator>> MakeVmm(
    const SubAllocatorParams& params) {
  if (absl::Status status = RequireCapacity("vmm", params.capacity);
      !status.ok())
    return status;
  return Checked(std::make_unique<VmmSubAllocator>(params.capacity));
}

struct Registered {
  SubAllocatorInfo info;
  Factory factory;
};

// One line per kind; kinds from other layers are appended at start-up.
NamedRegistry<Registered>& Registry() {
  static auto* registry = new NamedRegistry<Registered>(
      {
          {{"host", "aligned host memory from the C library",
            RegionContiguity::kNever},
           MakeHost},
          {{"simulated", "address space only (any device size, deterministic)",
            RegionContiguity::kChosen},
           MakeSimulated},
          {{"vmm", "reserved once, committed on demand, grows contiguously",
            RegionContiguity::kAlways},
           MakeVmm},
      },
      [](const Registered& kind) { return kind.info.name; });
  return *registry;
}

}  // namespace

std::vector<SubAllocatorInfo> SubAllocatorKinds() {
  std::vector<SubAllocatorInfo> kinds;
  for (const Registered* kind : Registry().List()) kinds.push_back(kind->info);
  return kinds;
}

void RegisterSubAllocatorKind(SubAllocatorInfo info,
                              SubAllocatorFactory factory) {
  Registry().Add({info, factory});
}

std::optional<bool> KindCoalesces(std::string_view kind,
                                  const SubAllocatorParams& params) {
  const Registered* registered = Registry().Find(kind);
  if (registered == nullptr) return std::nullopt;
  switch (registered->info.contiguity) {
    case RegionContiguity::kNever:
      return false;
    case RegionContiguity::kAlways:
      return true;
    case RegionContiguity::kChosen:
      return params.coalescing;
    case RegionContiguity::kUnknown:
      break;
  }
  return std::nullopt;
}

absl::StatusOr<std::unique_ptr<SubAllocator>> CreateSubAllocator(
    std::string_view kind, const SubAllocatorParams& params) {
  if (const Registered* registered = Registry().Find(kind))
    return registered->factory(params);
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown sub-allocator kind '%s' (known: %s)", std::string(kind),
      absl::StrJoin(Registry().Names(), ", ")));
}

}  // namespace tensormem
