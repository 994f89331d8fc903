#include "alloc/reserved_regions.h"

#include <cstdio>
#include <string>
#include <utility>

#include "tensormem/core/checked_math.h"

namespace tensormem::internal {

ReservedRegions::ReservedRegions(uint64_t capacity, uint64_t base_alignment,
                                 uint64_t granularity)
    : decommitted_(/*start=*/0, /*size=*/0) {
  absl::StatusOr<ReservedAddressSpace> space =
      ReservedAddressSpace::Reserve(capacity, base_alignment);
  if (!space.ok()) {
    status_ = space.status();
    ledger_ = std::make_unique<RegionLedger>(0, 0);
    return;
  }
  space_ = std::make_unique<ReservedAddressSpace>(*std::move(space));
  // A capacity that is not a whole number of granules loses its last part.
  ledger_ = std::make_unique<RegionLedger>(
      space_->base_address(), RoundDown(space_->capacity(), granularity));
}

std::optional<uintptr_t> ReservedRegions::Take(
    uint64_t size, uint64_t alignment, Placement placement,
    absl::FunctionRef<bool(uintptr_t, uint64_t)> prepare) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<uintptr_t> start;
  if (placement == Placement::kTopThenFirstFit)
    start = ledger_->TakeFromTop(size, alignment);
  if (!start) start = ledger_->TakeFirstFit(size, alignment);
  if (!start) return std::nullopt;
  // Preparing inside the lock keeps a failure from leaving a hole that
  // another thread's region was placed above.
  if (!prepare(*start, size)) {
    ledger_->Retire(*start, size).IgnoreError();  // it is live: cannot fail
    ledger_->Release(*start, size);
    return std::nullopt;
  }
  return start;
}

void ReservedRegions::Free(void* ptr, uint64_t bytes, std::string_view owner,
                           absl::FunctionRef<void()> finish) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (absl::Status misuse = ledger_->Retire(start, bytes); !misuse.ok()) {
      std::fprintf(stderr, "tensormem: %.*s: ignoring %s\n",
                   static_cast<int>(owner.size()), owner.data(),
                   std::string(misuse.message()).c_str());
      return;
    }
  }
  // The range stays retired while `finish` runs, so a visitor never sees its
  // addresses handed to another thread before it was told of the free.
  finish();
  std::lock_guard<std::mutex> lock(mutex_);
  // A decommitted range may span adjacent regions: only the part inside this
  // one goes.
  decommitted_.TakeOverlap(start, bytes);
  ledger_->Release(start, bytes);
}

bool ReservedRegions::Decommit(
    uintptr_t start, uint64_t size, std::string_view owner,
    absl::FunctionRef<bool(uintptr_t, uint64_t)> release) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (size == 0 || !ledger_->IsTaken(start, size) ||
      decommitted_.Overlaps(start, size)) {
    ReportMisuse(owner, "decommit", start, size,
                 "is not committed memory of live regions");
    return false;
  }
  if (!release(start, size)) return false;
  decommitted_.Release(start, size);
  return true;
}

bool ReservedRegions::Recommit(
    uintptr_t start, uint64_t size, std::string_view owner,
    absl::FunctionRef<bool(uintptr_t, uint64_t)> back) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!decommitted_.TakeRange(start, size)) {
    ReportMisuse(owner, "recommit", start, size, "is not decommitted");
    return false;
  }
  if (back(start, size)) return true;
  // Still decommitted: giving it back merges it into its range again.
  decommitted_.Release(start, size);
  return false;
}

uint64_t ReservedRegions::decommitted_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return decommitted_.free_bytes();
}

void ReservedRegions::ReportMisuse(std::string_view owner,
                                   std::string_view what, uintptr_t start,
                                   uint64_t size, std::string_view problem) {
  ledger_->CountMisuse();
  std::fprintf(stderr,
               "tensormem: %.*s: ignoring %.*s of %llu bytes at %#llx: "
               "the range %.*s\n",
               static_cast<int>(owner.size()), owner.data(),
               static_cast<int>(what.size()), what.data(),
               static_cast<unsigned long long>(size),
               static_cast<unsigned long long>(start),
               static_cast<int>(problem.size()), problem.data());
}

uint64_t ReservedRegions::live_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ledger_->live_bytes();
}

size_t ReservedRegions::live_regions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ledger_->live_regions();
}

int64_t ReservedRegions::misuse_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ledger_->misuse_count();
}

}  // namespace tensormem::internal
