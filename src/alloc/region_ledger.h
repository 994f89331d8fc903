// RegionLedger: the books of a sub-allocator that cuts regions out of one
// reserved address range (simulated, vmm): where the free space is, which
// regions are live, and the check every Free must pass.
//
//   RegionLedger ledger(space.base_address(), space.capacity());
//   std::optional<uintptr_t> start = ledger.TakeFirstFit(4096, 256);
//   ...
//   if (absl::Status s = ledger.Retire(*start, 4096); s.ok()) {
//     ledger.Release(*start, 4096);  // free for others again
//   }
#ifndef TENSORMEM_SRC_ALLOC_REGION_LEDGER_H_
#define TENSORMEM_SRC_ALLOC_REGION_LEDGER_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "alloc/address_space.h"

namespace tensormem::internal {

// Not thread-safe: its owner locks.
class RegionLedger {
 public:
  // Initially the whole [start, start + size) is free.
  RegionLedger(uintptr_t start, uint64_t size) : free_ranges_(start, size) {}

  // Take `size` bytes (see FreeRangeMap) and record them as a live region.
  std::optional<uintptr_t> TakeFirstFit(uint64_t size, uint64_t alignment);
  std::optional<uintptr_t> TakeFromTop(uint64_t size, uint64_t alignment);

  // Ends a live region that starts at `start` and has exactly `size` bytes.
  // Its range stays unavailable until Release, so the owner can finish with
  // it (visitors, decommit) without the lock. Anything else is misuse: an
  // error saying what is wrong, counted, and nothing changes.
  absl::Status Retire(uintptr_t start, uint64_t size);
  // Makes a retired range free again.
  void Release(uintptr_t start, uint64_t size) {
    free_ranges_.Release(start, size);
  }

  // Whether [start, start + size) lies in the space and wholly in live (or
  // retired) regions.
  bool IsTaken(uintptr_t start, uint64_t size) const {
    return start >= free_ranges_.start() && start <= free_ranges_.end() &&
           size <= free_ranges_.end() - start &&
           !free_ranges_.Overlaps(start, size);
  }
  uint64_t live_bytes() const { return live_bytes_; }
  size_t live_regions() const { return live_.size(); }
  int64_t misuse_count() const { return misuse_count_; }
  // Counts a misuse its owner found (a bad decommit or recommit).
  void CountMisuse() { ++misuse_count_; }

 private:
  std::optional<uintptr_t> Record(std::optional<uintptr_t> start,
                                  uint64_t size);

  FreeRangeMap free_ranges_;
  absl::flat_hash_map<uintptr_t, uint64_t> live_;  // start -> size
  uint64_t live_bytes_ = 0;
  int64_t misuse_count_ = 0;
};

}  // namespace tensormem::internal

#endif  // TENSORMEM_SRC_ALLOC_REGION_LEDGER_H_
