// AddressMap: where the BFC allocator's chunks are, by handle and by address.
//
// Chunks live in one vector and are named by 32-bit handles (a chunk's physical
// neighbours are handles too, so a region is a doubly linked list of chunks in
// address order). Regions are kept sorted by start address for lookups of any
// address. In-use chunks are also found by their start address in a hash map:
// that is what a free or a size query needs, and unlike a slot per 256 bytes it
// costs nothing for the untouched terabytes a simulated upstream may reserve.
#ifndef TENSORMEM_SRC_ALLOC_ADDRESS_MAP_H_
#define TENSORMEM_SRC_ALLOC_ADDRESS_MAP_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tensormem/alloc/bfc_free_index.h"

namespace tensormem::internal {

using ChunkHandle = uint32_t;
inline constexpr ChunkHandle kInvalidChunk = UINT32_MAX;

struct BfcChunk {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t requested_size = 0;  // what the caller asked for; 0 when free
  int64_t allocation_id = -1;   // -1 when free; ids start at 1
  uint64_t freed_at_count =
      0;  // timing counter value at free; 0 = safe to reuse
  ChunkHandle prev = kInvalidChunk;
  ChunkHandle next = kInvalidChunk;
  uint32_t pool = 0;  // the policy's pool of the chunk's region
  // Bumped whenever the handle is released, so queued references to a chunk
  // that has since been merged away are recognised as stale.
  uint32_t generation = 0;

  bool in_use() const { return allocation_id != -1; }
  uint64_t end() const { return address + size; }
  FreeChunkKey Key(ChunkHandle self) const { return {size, address, self}; }
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

  uint64_t size() const { return end - begin; }
};

class AddressMap {
 public:
  ChunkHandle NewChunk();
  void ReleaseChunk(ChunkHandle handle);
  BfcChunk& chunk(ChunkHandle handle) { return chunks_[handle]; }
  const BfcChunk& chunk(ChunkHandle handle) const { return chunks_[handle]; }
  size_t num_chunks() const { return chunks_.size() - free_handles_.size(); }

  // Regions, sorted by start address.
  const std::vector<BfcRegion>& regions() const { return regions_; }
  BfcRegion& AddRegion(void* ptr, uint64_t bytes, ChunkHandle first_chunk);
  // The region whose end is exactly `address`, or nullptr.
  BfcRegion* RegionEndingAt(uint64_t address);
  // The region containing `address`, or nullptr.
  const BfcRegion* RegionContaining(uint64_t address) const;
  BfcRegion* MutableRegionContaining(uint64_t address) {
    return const_cast<BfcRegion*>(RegionContaining(address));
  }
  void RemoveRegion(uint64_t begin);

  // In-use chunks by start address.
  void AddLive(uint64_t address, ChunkHandle handle) {
    live_.emplace(address, handle);
  }
  void RemoveLive(uint64_t address) { live_.erase(address); }
  ChunkHandle FindLive(uint64_t address) const {
    auto it = live_.find(address);
    return it == live_.end() ? kInvalidChunk : it->second;
  }
  size_t num_live() const { return live_.size(); }

  // The chunk containing `address` (any state), found by walking its region:
  // for diagnosing a bad pointer, not for the hot path.
  ChunkHandle FindContainingChunk(uint64_t address) const;

 private:
  std::vector<BfcChunk> chunks_;
  std::vector<ChunkHandle> free_handles_;
  std::vector<BfcRegion> regions_;
  absl::flat_hash_map<uint64_t, ChunkHandle> live_;
};

}  // namespace tensormem::internal

#endif  // TENSORMEM_SRC_ALLOC_ADDRESS_MAP_H_
