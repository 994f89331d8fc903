#include "alloc/reserved_regions.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tensormem/core/checked_math.h"

namespace tensormem::internal {

ReservedRegions::ReservedRegions(uint64_t capacity, uint64_t base_alignment,
                                 uint64_t granularity) {
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
  ForgetDecommitted(start, bytes);
  ledger_->Release(start, bytes);
}

bool ReservedRegions::Decommit(
    uintptr_t start, uint64_t size, std::string_view owner,
    absl::FunctionRef<bool(uintptr_t, uint64_t)> release) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (size == 0 || !ledger_->IsTaken(start, size) ||
      OverlapsDecommitted(start, size)) {
    ReportMisuse(owner, "decommit", start, size,
                 "is not committed memory of live regions");
    return false;
  }
  if (!release(start, size)) return false;
  uintptr_t merged_start = start;
  uint64_t merged_size = size;
  auto next = decommitted_.lower_bound(start);
  if (next != decommitted_.end() && next->first == start + size) {
    merged_size += next->second;
    next = decommitted_.erase(next);
  }
  if (next != decommitted_.begin()) {
    const auto previous = std::prev(next);
    if (previous->first + previous->second == start) {
      merged_start = previous->first;
      merged_size += previous->second;
      decommitted_.erase(previous);
    }
  }
  decommitted_.emplace(merged_start, merged_size);
  decommitted_bytes_ += size;
  return true;
}

bool ReservedRegions::Recommit(
    uintptr_t start, uint64_t size, std::string_view owner,
    absl::FunctionRef<bool(uintptr_t, uint64_t)> back) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto holder = decommitted_.upper_bound(start);
  if (holder == decommitted_.begin() || size == 0) {
    ReportMisuse(owner, "recommit", start, size, "is not decommitted");
    return false;
  }
  --holder;
  const uintptr_t range_start = holder->first;
  const uint64_t range_size = holder->second;
  if (start - range_start > range_size ||
      size > range_size - (start - range_start)) {
    ReportMisuse(owner, "recommit", start, size, "is not decommitted");
    return false;
  }
  if (!back(start, size)) return false;
  decommitted_.erase(holder);
  if (start > range_start)
    decommitted_.emplace(range_start, start - range_start);
  const uintptr_t end = start + size;
  if (end < range_start + range_size)
    decommitted_.emplace(end, range_start + range_size - end);
  decommitted_bytes_ -= size;
  return true;
}

uint64_t ReservedRegions::decommitted_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return decommitted_bytes_;
}

bool ReservedRegions::OverlapsDecommitted(uintptr_t start,
                                          uint64_t size) const {
  auto next = decommitted_.upper_bound(start);
  if (next != decommitted_.begin()) {
    const auto previous = std::prev(next);
    if (previous->first + previous->second > start) return true;
  }
  return next != decommitted_.end() && next->first < start + size;
}

void ReservedRegions::ForgetDecommitted(uintptr_t start, uint64_t size) {
  // A range may span adjacent regions: only the part inside this one goes.
  const uintptr_t end = start + size;
  std::vector<std::pair<uintptr_t, uint64_t>> overlapping;
  auto it = decommitted_.upper_bound(start);
  if (it != decommitted_.begin()) --it;
  for (; it != decommitted_.end() && it->first < end; ++it) {
    if (it->first + it->second > start) overlapping.push_back(*it);
  }
  // Changing a btree invalidates its iterators: edit after the scan.
  for (const auto& [range_start, range_size] : overlapping) {
    const uintptr_t range_end = range_start + range_size;
    decommitted_.erase(range_start);
    const uintptr_t cut_start = std::max(range_start, start);
    const uintptr_t cut_end = std::min(range_end, end);
    decommitted_bytes_ -= cut_end - cut_start;
    if (range_start < cut_start)
      decommitted_.emplace(range_start, cut_start - range_start);
    if (cut_end < range_end) decommitted_.emplace(cut_end, range_end - cut_end);
  }
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
