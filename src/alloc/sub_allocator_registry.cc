#include "tensormem/alloc/sub_allocator_registry.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tensormem/alloc/host_sub_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/alloc/vmm_sub_allocator.h"

namespace tensormem {
namespace {

absl::Status RequireCapacity(std::string_view kind, uint64_t capacity) {
  if (capacity > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "sub-allocator '%s' needs a capacity > 0 bytes", std::string(kind)));
}

}  // namespace

std::vector<std::string_view> SubAllocatorKinds() {
  return {"host", "simulated", "vmm"};
}

absl::StatusOr<std::unique_ptr<SubAllocator>> CreateSubAllocator(
    std::string_view kind, uint64_t capacity, bool coalescing) {
  if (kind == "host") {
    if (coalescing) {
      return absl::InvalidArgumentError(
          "sub-allocator 'host' cannot coalesce: its regions are never "
          "contiguous");
    }
    return std::make_unique<HostSubAllocator>();
  }
  if (kind == "simulated") {
    if (absl::Status status = RequireCapacity(kind, capacity); !status.ok())
      return status;
    auto simulated =
        std::make_unique<SimulatedSubAllocator>(capacity, coalescing);
    if (!simulated->status().ok()) return simulated->status();
    return simulated;
  }
  if (kind == "vmm") {
    if (absl::Status status = RequireCapacity(kind, capacity); !status.ok())
      return status;
    auto vmm = std::make_unique<VmmSubAllocator>(capacity);
    if (!vmm->status().ok()) return vmm->status();
    return vmm;
  }
  std::vector<std::string> known;
  for (std::string_view name : SubAllocatorKinds()) known.emplace_back(name);
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown sub-allocator kind '%s' (known: %s)",
                      std::string(kind), absl::StrJoin(known, ", ")));
}

}  // namespace tensormem
