// Blocks placed outside the allocation path: a recorded state rebuilt (a
// replay that starts where a recording began: regions and blocks where the
// recording says), and a block cut into the parts that stay (KeepOnly).
#include <vector>

#include "alloc/bfc_core.h"
#include "alloc/bfc_core_inline.h"
#include "tensormem/alloc/bfc_policy.h"

namespace tensormem::internal {

bool BfcCore::AddRegion(uint64_t bytes, uint64_t request_bytes,
                        int32_t stream) {
  const std::optional<uint64_t> rounded = RoundedSize(request_bytes);
  if (!rounded || bytes == 0 || bytes > Headroom()) return false;
  const int pool = inline_ ? 0 : PoolOf(stream, *rounded);
  size_t received = 0;
  void* ptr = upstream_->Alloc(bytes, bfc::kMinAllocationSize, &received);
  if (ptr == nullptr) return false;
  if (reinterpret_cast<uint64_t>(ptr) % bfc::kMinAllocationSize != 0 ||
      received % bfc::kMinAllocationSize != 0) {
    upstream_->Free(ptr, received);  // chunks are whole 256-byte units
    return false;
  }
  stats_.pool_bytes += received;
  stats_.peak_pool_bytes = std::max(stats_.peak_pool_bytes, stats_.pool_bytes);
  AddMemory(ptr, received, pool);
  return true;
}

void* BfcCore::AllocateAt(uint64_t address, uint64_t bytes, int32_t stream) {
  const std::optional<uint64_t> rounded = RoundedSize(bytes);
  if (!rounded || address % bfc::kMinAllocationSize != 0) return nullptr;
  const int pool = inline_ ? 0 : PoolOf(stream, *rounded);
  ChunkHandle free = map_.FindContainingChunk(address);
  if (free == kInvalidChunk) return nullptr;
  if (map_.chunk(free).decommitted()) {
    // Its granules under the block are committed again first.
    const BfcChunk& hole = map_.chunk(free);
    if (address + *rounded > hole.end() ||
        hole.pool != static_cast<uint32_t>(pool)) {
      return nullptr;
    }
    const uint64_t granule = decommit_granule_;
    free = Recommit(free, std::max(hole.address, RoundDown(address, granule)),
                    std::min(hole.end(), RoundUp(address + *rounded, granule)));
    if (free == kInvalidChunk) return nullptr;
    free = TryToCoalesce(free, /*ignore_freed_at=*/false);
    InsertFree(free);
  }
  const BfcChunk& chunk = map_.chunk(free);
  const uint64_t start = chunk.address;
  if (!chunk.Mergeable() || chunk.pool != static_cast<uint32_t>(pool) ||
      address + *rounded > chunk.end()) {
    return nullptr;
  }
  RemoveFree(free);
  ChunkHandle block = free;
  if (start < address) {
    block = SplitChunk(free, address - start);
    InsertFree(free);
  }
  // What follows the block up to the next block or the region's end is cut
  // off as the policy's split rule says, as it would have been when served.
  if (ShouldSplit(map_.chunk(block).size, *rounded, pool)) {
    InsertFree(SplitChunk(block, *rounded));
  }
  return MarkInUse(block, bytes);
}

bool BfcCore::KeepOnly(uint64_t address, std::span<const bfc::KeptPart> parts) {
  const ChunkHandle handle = map_.FindLive(address);
  if (handle == kInvalidChunk) return false;
  const uint64_t block_bytes = map_.chunk(handle).size;
  uint64_t end = 0;  // of the last part
  for (const bfc::KeptPart& part : parts) {
    if (part.bytes == 0 || part.offset < end ||
        part.offset % bfc::kMinAllocationSize != 0 ||
        part.bytes % bfc::kMinAllocationSize != 0 ||
        part.bytes > block_bytes - part.offset || part.requested > part.bytes) {
      return false;
    }
    end = part.offset + part.bytes;
  }
  // The block is freed as a whole, cut into its parts and the gaps between
  // them (each marked in use meanwhile, so that no cut merges), and then
  // the parts are served and the gaps freed.
  const BfcChunk& block = map_.chunk(handle);
  map_.TakeLive(address);
  stats_.bytes_in_use -= block.size;
  stats_.bytes_requested -= block.requested_size;
  const int64_t cut_id = block.allocation_id;
  std::vector<ChunkHandle> gaps;
  ChunkHandle rest = handle;
  for (const bfc::KeptPart& part : parts) {
    const uint64_t start = address + part.offset;
    if (map_.chunk(rest).address < start) {
      gaps.push_back(rest);
      rest = SplitChunk(rest, start - map_.chunk(rest).address);
      map_.chunk(rest).allocation_id = cut_id;
    }
    ChunkHandle kept = rest;
    rest = kInvalidChunk;
    if (map_.chunk(kept).size > part.bytes) {
      rest = SplitChunk(kept, part.bytes);
      map_.chunk(rest).allocation_id = cut_id;
    }
    MarkInUse(kept, part.requested);
    if (rest == kInvalidChunk) break;
  }
  if (rest != kInvalidChunk) gaps.push_back(rest);
  for (const ChunkHandle gap : gaps) {
    BfcChunk& chunk = map_.chunk(gap);
    chunk.allocation_id = BfcChunk::kFreeChunkId;
    chunk.requested_size = 0;
    IndexFreed(gap);  // as a free
  }
  return true;
}

}  // namespace tensormem::internal
