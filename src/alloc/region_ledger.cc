#include "alloc/region_ledger.h"

#include "absl/strings/str_format.h"

namespace tensormem::internal {

std::optional<uintptr_t> RegionLedger::Record(std::optional<uintptr_t> start,
                                              uint64_t size) {
  if (start) {
    live_.emplace(*start, size);
    live_bytes_ += size;
  }
  return start;
}

std::optional<uintptr_t> RegionLedger::TakeFirstFit(uint64_t size,
                                                    uint64_t alignment) {
  return Record(free_ranges_.TakeFirstFit(size, alignment), size);
}

std::optional<uintptr_t> RegionLedger::TakeFromTop(uint64_t size,
                                                   uint64_t alignment) {
  return Record(free_ranges_.TakeFromTop(size, alignment), size);
}

absl::Status RegionLedger::Retire(uintptr_t start, uint64_t size) {
  auto it = live_.find(start);
  if (it == live_.end()) {
    ++misuse_count_;
    return absl::InvalidArgumentError(
        absl::StrFormat("Free(%#x, %d): not a live region", start, size));
  }
  if (it->second != size) {
    ++misuse_count_;
    return absl::InvalidArgumentError(absl::StrFormat(
        "Free(%#x, %d): the region has %d bytes", start, size, it->second));
  }
  live_.erase(it);
  live_bytes_ -= size;
  return absl::OkStatus();
}

}  // namespace tensormem::internal
