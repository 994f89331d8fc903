// Rebuilding a recorded state (a replay that starts where a recording
// began): regions and blocks placed where the recording says, outside the
// allocation path.
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

}  // namespace tensormem::internal
