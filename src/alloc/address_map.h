// AddressMap: where the BFC allocator's chunks are, by handle and by address.
//
// Chunks live in one vector and are named by 32-bit handles (a chunk's physical
// neighbours are handles too, so a region is a doubly linked list of chunks in
// address order). Regions are kept sorted by start address for lookups of any
// address. In-use chunks are also found by their start address, which is what a
// free or a size query needs: each region keeps a handle per 256 bytes, as
// TensorFlow does, but in pages made when a block first starts in them
// (LiveTable), so the untouched terabytes a simulated upstream may reserve cost
// nothing, and a lookup is a few loads instead of a hash.
#ifndef TENSORMEM_SRC_ALLOC_ADDRESS_MAP_H_
#define TENSORMEM_SRC_ALLOC_ADDRESS_MAP_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "tensormem/alloc/bfc_free_index.h"

namespace tensormem::internal {

using ChunkHandle = uint32_t;
inline constexpr ChunkHandle kInvalidChunk = UINT32_MAX;

struct BfcChunk {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t requested_size = 0;  // what the caller asked for; 0 when free
  int64_t allocation_id = kFreeChunkId;  // ids of blocks start at 1
  uint64_t freed_at_count =
      0;  // timing counter value at free; 0 = safe to reuse
  ChunkHandle prev = kInvalidChunk;
  ChunkHandle next = kInvalidChunk;
  uint32_t pool = 0;  // the policy's pool of the chunk's region
  // Bumped whenever the handle is released, so queued references to a chunk
  // that has since been merged away are recognised as stale.
  uint32_t generation = 0;

  // A free chunk is in its pool's free index; a decommitted one is address
  // space whose memory went back to the upstream: neither free nor in use.
  static constexpr int64_t kFreeChunkId = -1;
  static constexpr int64_t kDecommittedChunkId = -2;

  bool in_use() const { return allocation_id > 0; }
  bool is_free() const { return allocation_id == kFreeChunkId; }
  bool decommitted() const { return allocation_id == kDecommittedChunkId; }
  // Free (in the free index) and not waiting for a safe frontier: a freed
  // neighbour absorbs it.
  bool Mergeable() const { return is_free() && freed_at_count == 0; }
  uint64_t end() const { return address + size; }
  FreeChunkKey Key(ChunkHandle self) const { return {size, address, self}; }
};

// In-use chunks by start address: a handle per 256 bytes of address space,
// as TensorFlow keeps per region, in three levels (64 MiB, 64 KiB, 256 B) whose
// lower two are made when a block first starts in them. A lookup is a few
// dependent loads, with no search for the region. Memory: 1 KiB per 64 KiB in
// which a block ever started (at most 1/64 of the bytes used, TensorFlow's
// constant cost), 8 KiB per 64 MiB touched, and 8 bytes per 64 MiB between the
// lowest and the highest block.
class LiveTable {
 public:
  // The handle stored for `address`, or kInvalidChunk.
  ChunkHandle Find(uint64_t address) const {
    const ChunkHandle* slot = Slot(address);
    return slot == nullptr ? kInvalidChunk : *slot;
  }
  // Where the handle for `address` is stored; nullptr if no block ever started
  // near it.
  [[gnu::always_inline]] ChunkHandle* Slot(uint64_t address) const {
    const uint64_t top = (address >> kTopShift) - base_top_;  // wraps if below
    if (top >= top_.size() || top_[top] == nullptr) return nullptr;
    Leaf* leaf = (*top_[top])[(address >> kMidShift) & kMidMask];
    if (leaf == nullptr) return nullptr;
    return &(*leaf)[(address >> kSlotBits) & kLeafMask];
  }
  // `address` must be a multiple of 256.
  [[gnu::always_inline]] void Set(uint64_t address, ChunkHandle handle) {
    if (ChunkHandle* slot = Slot(address)) {
      *slot = handle;
      return;
    }
    SetInNewPage(address, handle);
  }

 private:
  static constexpr int kSlotBits = 8;
  static constexpr int kLeafBits = 8;
  static constexpr int kMidBits = 10;
  static constexpr int kMidShift = kSlotBits + kLeafBits;
  static constexpr int kTopShift = kMidShift + kMidBits;
  static constexpr uint64_t kLeafMask = (uint64_t{1} << kLeafBits) - 1;
  static constexpr uint64_t kMidMask = (uint64_t{1} << kMidBits) - 1;
  using Leaf = std::array<ChunkHandle, size_t{1} << kLeafBits>;
  using Mid = std::array<Leaf*, size_t{1} << kMidBits>;  // leaves in slabs_
  // Leaves are carved from slabs of up to this many, so that making one is
  // a bump and a fill rather than a heap allocation (a pool whose layout
  // shifts makes hundreds of leaves per pass).
  static constexpr size_t kMaxLeavesPerSlab = 64;

  // Set, making the pages on the way to the slot.
  void SetInNewPage(uint64_t address, ChunkHandle handle);
  Leaf* NewLeaf();

  uint64_t base_top_ = 0;  // address >> kTopShift of top_[0]
  std::vector<std::unique_ptr<Mid>> top_;
  std::vector<std::unique_ptr<Leaf[]>> slabs_;
  size_t slab_capacity_ = 0;  // leaves in slabs_.back()
  size_t slab_used_ = 0;      // of them handed out
};

// A piece of memory obtained from the upstream in one call. A region is one
// piece, or several contiguous ones when a coalescing upstream extended it.
struct UpstreamPiece {
  void* ptr = nullptr;
  uint64_t bytes = 0;
};

struct BfcRegion {
  uint64_t begin = 0;
  uint64_t end = 0;
  ChunkHandle first_chunk = kInvalidChunk;
  ChunkHandle last_chunk = kInvalidChunk;  // where a coalescing upstream grows
  std::vector<UpstreamPiece> pieces;
  uint32_t pool = 0;
  // The pool's request count when the region last became wholly free (only
  // for policies that release regions by age).
  uint64_t freed_at_request = 0;

  uint64_t size() const { return end - begin; }
};

class AddressMap {
 public:
  [[gnu::always_inline]] ChunkHandle NewChunk() {
    if (free_handles_.empty()) return NewHandle();
    const ChunkHandle handle = free_handles_.back();
    free_handles_.pop_back();
    return handle;
  }
  [[gnu::always_inline]] void ReleaseChunk(ChunkHandle handle) {
    BfcChunk& released = chunks_[handle];
    const uint32_t next_generation = released.generation + 1;
    released = BfcChunk();
    released.generation = next_generation;
    free_handles_.push_back(handle);
  }
  BfcChunk& chunk(ChunkHandle handle) { return chunks_[handle]; }
  const BfcChunk& chunk(ChunkHandle handle) const { return chunks_[handle]; }
  size_t num_chunks() const { return chunks_.size() - free_handles_.size(); }

  // Regions, sorted by start address.
  const std::vector<BfcRegion>& regions() const { return regions_; }
  BfcRegion& AddRegion(void* ptr, uint64_t bytes, ChunkHandle first_chunk);
  // The region whose end is exactly `address`, or nullptr.
  BfcRegion* RegionEndingAt(uint64_t address);
  // The region containing `address`, or nullptr.
  const BfcRegion* RegionContaining(uint64_t address) const {
    // Lookups come in runs on one region (splits and merges at its end): the
    // region found last is tried first.
    if (region_hint_ < regions_.size()) {
      const BfcRegion& hint = regions_[region_hint_];
      if (address - hint.begin < hint.end - hint.begin) return &hint;
    }
    auto it = std::upper_bound(
        regions_.begin(), regions_.end(), address,
        [](uint64_t value, const BfcRegion& r) { return value < r.begin; });
    if (it == regions_.begin()) return nullptr;
    --it;
    if (address >= it->end) return nullptr;
    region_hint_ = it - regions_.begin();
    return &*it;
  }
  BfcRegion* MutableRegionContaining(uint64_t address) {
    return const_cast<BfcRegion*>(RegionContaining(address));
  }
  void RemoveRegion(uint64_t begin);

  // In-use chunks by start address (a chunk's address lies in a region).
  [[gnu::always_inline]] void AddLive(uint64_t address, ChunkHandle handle) {
    live_.Set(address, handle);
    ++num_live_;
  }
  // Removes and returns the in-use chunk starting at `address` (any value);
  // kInvalidChunk (and no change) when there is none.
  ChunkHandle TakeLive(uint64_t address) {
    ChunkHandle* slot = address % 256 == 0 ? live_.Slot(address) : nullptr;
    if (slot == nullptr || *slot == kInvalidChunk) return kInvalidChunk;
    --num_live_;
    return std::exchange(*slot, kInvalidChunk);
  }
  // The in-use chunk starting at `address` (any value), or kInvalidChunk.
  ChunkHandle FindLive(uint64_t address) const {
    if (address % 256 != 0) return kInvalidChunk;
    return live_.Find(address);
  }
  size_t num_live() const { return num_live_; }

  // The chunk containing `address` (any state), found by walking its region:
  // for diagnosing a bad pointer, not for the hot path.
  ChunkHandle FindContainingChunk(uint64_t address) const;

 private:
  ChunkHandle NewHandle();  // grows chunks_

  std::vector<BfcChunk> chunks_;
  std::vector<ChunkHandle> free_handles_;
  std::vector<BfcRegion> regions_;
  // Where RegionContaining found its last answer (checked before use: regions
  // come and go).
  mutable size_t region_hint_ = 0;
  LiveTable live_;
  size_t num_live_ = 0;
};

}  // namespace tensormem::internal

#endif  // TENSORMEM_SRC_ALLOC_ADDRESS_MAP_H_
