// BFC policy: the size classes, fit and split rules of the BFC allocator.
//
// These are the decisions that make tensormem's BFC allocator place blocks
// exactly where TensorFlow's does, written down once as pure functions so the
// allocator, its free indexes and the tests all share one definition.
//
//   std::optional<uint64_t> rounded = bfc::RoundedBytes(4);     // 256
//   int bin = bfc::BinNumForSize(4096);                         // 4
//   bool split = bfc::ShouldSplit(1 << 20, 614400, 128 << 20);  // false
#ifndef TENSORMEM_ALLOC_BFC_POLICY_H_
#define TENSORMEM_ALLOC_BFC_POLICY_H_

#include <algorithm>
#include <cstdint>
#include <optional>

#include "tensormem/core/checked_math.h"
#include "tensormem/core/units.h"

namespace tensormem::bfc {

// Every request is rounded up to a multiple of this; chunks and regions are
// multiples of it too.
inline constexpr uint64_t kMinAllocationBits = 8;
inline constexpr uint64_t kMinAllocationSize = uint64_t{1}
                                               << kMinAllocationBits;

// Bin b holds free chunks with size in [256 << b, 256 << (b + 1)); the last bin
// is unbounded (everything from 256 MiB up).
inline constexpr int kNumBins = 21;

// Split threshold for the unused tail of a chunk when no fraction is given.
inline constexpr uint64_t kDefaultMaxInternalFragmentation = 128 * kMiB;

// Growth starts with regions of this size (or the limit, if smaller).
inline constexpr uint64_t kInitialGrowthRegionBytes = 2 * kMiB;

// Request `bytes` rounded up to a multiple of 256, or nullopt on overflow.
constexpr std::optional<uint64_t> RoundedBytes(uint64_t bytes) {
  return CheckedRoundUp(bytes, kMinAllocationSize);
}

// The bin whose size class contains `size`; sizes below 256 go to bin 0.
constexpr int BinNumForSize(uint64_t size) {
  // Setting bit 8 maps sizes below 256 to one unit and leaves the highest bit
  // of larger sizes alone: max(size, 256) without a comparison.
  const uint64_t units = (size | kMinAllocationSize) >> kMinAllocationBits;
  return std::min(kNumBins - 1, Log2Floor(units));
}

// Smallest chunk size bin `bin` holds.
constexpr uint64_t BinSizeFloor(int bin) { return kMinAllocationSize << bin; }

// A chunk of `chunk_size` chosen for a request of `rounded` bytes is split at
// `rounded` when the tail is as large as the request, or when keeping the
// tail would waste at least `max_internal_fragmentation` bytes.
constexpr bool ShouldSplit(uint64_t chunk_size, uint64_t rounded,
                           uint64_t max_internal_fragmentation) {
  return chunk_size >= 2 * rounded ||
         chunk_size - rounded >= max_internal_fragmentation;
}

// The next, smaller region size to ask an upstream that refused `bytes`: 0.9x
// rounded to 256, and always strictly smaller so the loop ends (a 0.9x that
// rounds back up to `bytes` would otherwise repeat forever for small sizes).
constexpr uint64_t BackpedalBytes(uint64_t bytes) {
  const uint64_t shrunk =
      RoundUp(bytes / 10 * 9 + (bytes % 10) * 9 / 10, kMinAllocationSize);
  if (shrunk < bytes) return shrunk;
  return bytes >= kMinAllocationSize ? bytes - kMinAllocationSize : 0;
}

// Twice `region_bytes`, saturating instead of wrapping around (a pool that
// grows and is garbage-collected again and again doubles it every time).
constexpr uint64_t DoubledRegionBytes(uint64_t region_bytes) {
  if (region_bytes == 0) return kMinAllocationSize;
  return region_bytes > UINT64_MAX / 2 ? UINT64_MAX : 2 * region_bytes;
}

// Bytes of padding in front of `address` (a multiple of 256) so that a block
// starts at a multiple of `alignment` (a power of two).
constexpr uint64_t AlignmentPadding(uint64_t address, uint64_t alignment) {
  return (0 - address) & (alignment - 1);
}

// A part of a block that stays in use when the rest is freed
// (BfcAllocator::KeepOnly): `bytes` from `offset` into the block, holding a
// request of `requested` bytes.
struct KeptPart {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint64_t requested = 0;
};

}  // namespace tensormem::bfc

#endif  // TENSORMEM_ALLOC_BFC_POLICY_H_
