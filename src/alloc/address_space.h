// Internal building blocks of the simulated and vmm sub-allocators.
//
// ReservedAddressSpace owns a PROT_NONE mapping that is never touched, so any
// capacity (80 GiB on a 24 GiB machine) costs no memory. FreeRangeMap keeps
// the free parts of such a range in address order and merges neighbours on
// release, which makes placements deterministic.
//
//   TM_ASSIGN_OR_RETURN(ReservedAddressSpace space,
//                       ReservedAddressSpace::Reserve(80 * kGiB, 2 * kMiB));
//   FreeRangeMap ranges(space.base_address(), space.capacity());
//   std::optional<uintptr_t> start = ranges.TakeFirstFit(4096, 256);
#ifndef TENSORMEM_SRC_ALLOC_ADDRESS_SPACE_H_
#define TENSORMEM_SRC_ALLOC_ADDRESS_SPACE_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/container/btree_map.h"
#include "absl/status/statusor.h"

namespace tensormem::internal {

class ReservedAddressSpace {
 public:
  // Reserves `capacity` bytes (> 0) whose start is aligned to `base_alignment`
  // (a power of two). Over-reserves by the alignment and trims both ends, so
  // the kernel's own placement needs no luck.
  static absl::StatusOr<ReservedAddressSpace> Reserve(uint64_t capacity,
                                                      uint64_t base_alignment);

  ReservedAddressSpace(ReservedAddressSpace&& other) noexcept;
  ReservedAddressSpace& operator=(ReservedAddressSpace&& other) noexcept;
  ~ReservedAddressSpace();

  void* base() const { return base_; }
  uintptr_t base_address() const { return reinterpret_cast<uintptr_t>(base_); }
  uint64_t capacity() const { return capacity_; }

 private:
  ReservedAddressSpace(void* base, uint64_t capacity)
      : base_(base), capacity_(capacity) {}

  void* base_ = nullptr;
  uint64_t capacity_ = 0;
};

// Not thread-safe: its owner locks.
class FreeRangeMap {
 public:
  // Initially the whole [start, start + size) is free.
  FreeRangeMap(uintptr_t start, uint64_t size);

  // Takes `size` bytes at the lowest address aligned to `alignment` (a power
  // of two) where they fit; nullopt when nowhere.
  std::optional<uintptr_t> TakeFirstFit(uint64_t size, uint64_t alignment);

  // Takes `size` bytes from the free range that ends at the end of the space
  // (the "top"), at its lowest aligned address; nullopt when that range is
  // taken or too small. Successive takes are contiguous when aligned.
  std::optional<uintptr_t> TakeFromTop(uint64_t size, uint64_t alignment);

  // Returns a range previously taken; merges it with free neighbours.
  void Release(uintptr_t start, uint64_t size);
  // Takes [start, start + size), which must lie in one free range; false
  // (and nothing changes) when it does not.
  bool TakeRange(uintptr_t start, uint64_t size);
  // Takes whatever part of [start, start + size) is free.
  void TakeOverlap(uintptr_t start, uint64_t size);

  uintptr_t start() const { return start_; }
  uintptr_t end() const { return end_; }
  // Whether any part of [start, start + size) is free.
  bool Overlaps(uintptr_t start, uint64_t size) const;
  uint64_t free_bytes() const { return free_bytes_; }
  size_t range_count() const { return free_.size(); }

 private:
  // Takes [aligned, aligned + size) out of the free range at `it`.
  uintptr_t TakeFrom(absl::btree_map<uintptr_t, uintptr_t>::iterator it,
                     uintptr_t aligned, uint64_t size);
  // The aligned start inside the free range [start, start + length) where
  // `size` bytes fit, if any.
  static std::optional<uintptr_t> FitIn(uintptr_t start, uint64_t length,
                                        uint64_t size, uint64_t alignment);

  const uintptr_t start_;
  const uintptr_t end_;
  // end -> start of each free range, disjoint, never adjacent. Keyed by the
  // end, so taking the front of a range (the common case: growth at the
  // lowest free address) changes a value in place instead of re-keying.
  absl::btree_map<uintptr_t, uintptr_t> free_;
  uint64_t free_bytes_ = 0;
};

}  // namespace tensormem::internal

#endif  // TENSORMEM_SRC_ALLOC_ADDRESS_SPACE_H_
