// ReservedRegions: what the simulated and vmm sub-allocators share.
//
// Both reserve one address range up front and cut regions out of it; they
// differ only in where a region goes and in what happens to its pages (vmm
// commits and decommits them, simulated never touches them). This keeps the
// reservation, the ledger of live regions, the lock and the misuse report.
//
//   ReservedRegions regions(capacity, /*base_alignment=*/2 << 20,
//                           /*granularity=*/4096);
//   std::optional<uintptr_t> start = regions.Take(
//       8192, 4096, ReservedRegions::Placement::kFirstFit,
//       [](uintptr_t, uint64_t) { return true; });
#ifndef TENSORMEM_SRC_ALLOC_RESERVED_REGIONS_H_
#define TENSORMEM_SRC_ALLOC_RESERVED_REGIONS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "alloc/address_space.h"
#include "alloc/region_ledger.h"

namespace tensormem::internal {

class ReservedRegions {
 public:
  enum class Placement {
    kFirstFit,        // the lowest free address that fits
    kTopThenFirstFit  // after the highest live region if it fits there
  };

  // Reserves `capacity` bytes aligned to `base_alignment`; only whole
  // multiples of `granularity` are handed out. When the reservation fails,
  // status() says why and every Take fails.
  ReservedRegions(uint64_t capacity, uint64_t base_alignment,
                  uint64_t granularity);

  const absl::Status& status() const { return status_; }
  const void* base() const {
    return space_ == nullptr ? nullptr : space_->base();
  }

  // Takes `size` bytes aligned to `alignment` (a power of two), then calls
  // `prepare` on them under the lock; when it returns false the range is
  // given back and Take fails. nullopt when nothing fits.
  std::optional<uintptr_t> Take(
      uint64_t size, uint64_t alignment, Placement placement,
      absl::FunctionRef<bool(uintptr_t, uint64_t)> prepare);
  // Ends the live region [ptr, ptr + bytes): `finish` runs without the lock
  // (visitors, decommit), then the range is free again. A pointer or size
  // that matches no live region is reported on stderr under `owner`,
  // counted, and changes nothing.
  void Free(void* ptr, uint64_t bytes, std::string_view owner,
            absl::FunctionRef<void()> finish);

  // Decommits [start, start + size): it must lie in live regions and not be
  // decommitted already; `release` then gives its memory back, under the
  // lock. false (a bad range is also reported under `owner` and counted) when
  // the range is refused or `release` fails. Freeing a region forgets the
  // decommitted ranges inside it.
  bool Decommit(uintptr_t start, uint64_t size, std::string_view owner,
                absl::FunctionRef<bool(uintptr_t, uint64_t)> release);
  // Recommits [start, start + size), which must lie in one decommitted range,
  // through `back`; false when refused or `back` fails.
  bool Recommit(uintptr_t start, uint64_t size, std::string_view owner,
                absl::FunctionRef<bool(uintptr_t, uint64_t)> back);
  uint64_t decommitted_bytes() const;
  uint64_t live_bytes() const;
  size_t live_regions() const;
  int64_t misuse_count() const;

 private:
  void ReportMisuse(std::string_view owner, std::string_view what,
                    uintptr_t start, uint64_t size, std::string_view problem)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  absl::Status status_;
  std::unique_ptr<ReservedAddressSpace> space_;
  mutable std::mutex mutex_;
  std::unique_ptr<RegionLedger> ledger_ ABSL_GUARDED_BY(mutex_);
  // The decommitted ranges, disjoint and merged: a range map whose "free"
  // ranges are the decommitted ones (empty at first).
  FreeRangeMap decommitted_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace tensormem::internal

#endif  // TENSORMEM_SRC_ALLOC_RESERVED_REGIONS_H_
