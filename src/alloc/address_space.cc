#include "alloc/address_space.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "tensormem/core/checked_math.h"

namespace tensormem::internal {

absl::StatusOr<ReservedAddressSpace> ReservedAddressSpace::Reserve(
    uint64_t capacity, uint64_t base_alignment) {
  if (capacity == 0) {
    return absl::InvalidArgumentError(
        "address space capacity must be > 0 bytes");
  }
  if (!IsPowerOfTwo(base_alignment)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "base alignment %d is not a power of two", base_alignment));
  }
  const std::optional<uint64_t> padded = CheckedAdd(capacity, base_alignment);
  if (!padded || *padded > SIZE_MAX) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "address space capacity %d bytes is too large", capacity));
  }
  // PROT_NONE + MAP_NORESERVE: the kernel hands out addresses but no memory
  // and charges nothing against overcommit, so the capacity can exceed RAM.
  void* raw = mmap(nullptr, *padded, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("cannot reserve %d bytes of address space: %s",
                        capacity, std::strerror(errno)));
  }
  const uintptr_t raw_start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned_start = RoundUp(raw_start, base_alignment);
  const uint64_t head = aligned_start - raw_start;
  const uint64_t tail = *padded - head - capacity;
  if (head > 0) munmap(raw, head);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned_start + capacity), tail);
  return ReservedAddressSpace(reinterpret_cast<void*>(aligned_start), capacity);
}

ReservedAddressSpace::ReservedAddressSpace(
    ReservedAddressSpace&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)) {}

ReservedAddressSpace& ReservedAddressSpace::operator=(
    ReservedAddressSpace&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) munmap(base_, capacity_);
    base_ = std::exchange(other.base_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

ReservedAddressSpace::~ReservedAddressSpace() {
  if (base_ != nullptr) munmap(base_, capacity_);
}

FreeRangeMap::FreeRangeMap(uintptr_t start, uint64_t size)
    : start_(start), end_(start + size) {
  if (size > 0) {
    free_.emplace(end_, start);
    free_bytes_ = size;
  }
}

std::optional<uintptr_t> FreeRangeMap::FitIn(uintptr_t start, uint64_t length,
                                             uint64_t size,
                                             uint64_t alignment) {
  const std::optional<uint64_t> aligned = CheckedRoundUp(start, alignment);
  if (!aligned) return std::nullopt;
  const uint64_t padding = *aligned - start;
  if (padding > length || length - padding < size) return std::nullopt;
  return *aligned;
}

uintptr_t FreeRangeMap::TakeFrom(
    absl::btree_map<uintptr_t, uintptr_t>::iterator it, uintptr_t aligned,
    uint64_t size) {
  const uintptr_t range_start = it->second;
  const uintptr_t range_end = it->first;
  // The rest after keeps the range's key; the alignment padding before
  // becomes a range of its own.
  if (aligned + size < range_end) {
    it->second = aligned + size;
  } else {
    free_.erase(it);
  }
  if (aligned > range_start) free_.emplace(aligned, range_start);
  free_bytes_ -= size;
  return aligned;
}

std::optional<uintptr_t> FreeRangeMap::TakeFirstFit(uint64_t size,
                                                    uint64_t alignment) {
  if (size == 0) return std::nullopt;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (std::optional<uintptr_t> aligned =
            FitIn(it->second, it->first - it->second, size, alignment)) {
      return TakeFrom(it, *aligned, size);
    }
  }
  return std::nullopt;
}

std::optional<uintptr_t> FreeRangeMap::TakeFromTop(uint64_t size,
                                                   uint64_t alignment) {
  if (size == 0 || free_.empty()) return std::nullopt;
  auto last = std::prev(free_.end());
  if (last->first != end_) return std::nullopt;
  std::optional<uintptr_t> aligned =
      FitIn(last->second, last->first - last->second, size, alignment);
  if (!aligned) return std::nullopt;
  return TakeFrom(last, *aligned, size);
}

void FreeRangeMap::Release(uintptr_t start, uint64_t size) {
  const uintptr_t end = start + size;
  uintptr_t merged_start = start;
  // A free range ending where this one starts joins it from below.
  if (auto below = free_.find(start); below != free_.end()) {
    merged_start = below->second;
    free_.erase(below);
  }
  // The first range ending after `end` starts there when it is adjacent.
  if (auto above = free_.upper_bound(end);
      above != free_.end() && above->second == end) {
    above->second = merged_start;
  } else {
    free_.emplace(end, merged_start);
  }
  free_bytes_ += size;
}

bool FreeRangeMap::Overlaps(uintptr_t start, uint64_t size) const {
  // The first free range ending after `start` is the only candidate.
  const auto next = free_.upper_bound(start);
  return next != free_.end() && next->second < start + size;
}

bool FreeRangeMap::TakeRange(uintptr_t start, uint64_t size) {
  if (size == 0) return false;
  // The only range that can hold it is the first one ending at or after its
  // end.
  const auto holder = free_.lower_bound(start + size);
  if (holder == free_.end() || holder->second > start) return false;
  TakeFrom(holder, start, size);
  return true;
}

void FreeRangeMap::TakeOverlap(uintptr_t start, uint64_t size) {
  const uintptr_t end = start + size;
  std::vector<std::pair<uintptr_t, uintptr_t>> overlaps;  // [begin, end)
  for (auto it = free_.upper_bound(start);
       it != free_.end() && it->second < end; ++it) {
    overlaps.emplace_back(std::max(it->second, start),
                          std::min(it->first, end));
  }
  // Taking changes the map and so invalidates its iterators: take after the
  // scan.
  for (const auto& [begin, stop] : overlaps) TakeRange(begin, stop - begin);
}

}  // namespace tensormem::internal
