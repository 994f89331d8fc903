#include "tensormem/alloc/sub_allocator_registry.h"

#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tensormem/alloc/host_sub_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/alloc/vmm_sub_allocator.h"

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
std::vector<Registered>& Registry() {
  static auto* registry = new std::vector<Registered>{
      {{"host", "aligned host memory from the C library",
        RegionContiguity::kNever},
       MakeHost},
      {{"simulated", "address space only (any device size, deterministic)",
        RegionContiguity::kChosen},
       MakeSimulated},
      {{"vmm", "reserved once, committed on demand, grows contiguously",
        RegionContiguity::kAlways},
       MakeVmm},
  };
  return *registry;
}

std::vector<SubAllocatorInfo>& Kinds() {
  static auto* kinds = [] {
    auto* list = new std::vector<SubAllocatorInfo>;
    for (const Registered& kind : Registry()) list->push_back(kind.info);
    return list;
  }();
  return *kinds;
}

std::mutex& RegistryMutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}

}  // namespace

const std::vector<SubAllocatorInfo>& SubAllocatorKinds() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  return Kinds();
}

void RegisterSubAllocatorKind(SubAllocatorInfo info,
                              SubAllocatorFactory factory) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  for (const Registered& registered : Registry()) {
    if (registered.info.name == info.name) return;
  }
  Kinds();  // built from the table before it grows
  Registry().push_back({info, factory});
  Kinds().push_back(info);
}

std::optional<bool> KindCoalesces(std::string_view kind,
                                  const SubAllocatorParams& params) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  for (const Registered& registered : Registry()) {
    if (registered.info.name != kind) continue;
    switch (registered.info.contiguity) {
      case RegionContiguity::kNever:
        return false;
      case RegionContiguity::kAlways:
        return true;
      case RegionContiguity::kChosen:
        return params.coalescing;
      case RegionContiguity::kUnknown:
        break;
    }
  }
  return std::nullopt;
}

absl::StatusOr<std::unique_ptr<SubAllocator>> CreateSubAllocator(
    std::string_view kind, const SubAllocatorParams& params) {
  std::vector<std::string> known;
  Factory factory = nullptr;
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    for (const Registered& registered : Registry()) {
      if (registered.info.name == kind) factory = registered.factory;
      known.emplace_back(registered.info.name);
    }
  }
  if (factory != nullptr) return factory(params);
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown sub-allocator kind '%s' (known: %s)",
                      std::string(kind), absl::StrJoin(known, ", ")));
}

}  // namespace tensormem
