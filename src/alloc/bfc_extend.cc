// Growing the pool (Extend) and giving memory back (garbage collection).
#include <algorithm>
#include <vector>

#include "alloc/bfc_core.h"
#include "tensormem/alloc/bfc_policy.h"

namespace tensormem::internal {

BfcCore::~BfcCore() {
  for (const BfcRegion& region : map_.regions()) {
    for (auto piece = region.pieces.rbegin(); piece != region.pieces.rend();
         ++piece) {
      upstream_->Free(piece->ptr, piece->bytes);
    }
  }
}

bool BfcCore::Extend(uint64_t alignment, uint64_t rounded) {
  // An upstream may hand back more than asked, so the pool can exceed the
  // limit.
  const uint64_t headroom = stats_.pool_bytes >= config_.memory_limit
                                ? 0
                                : config_.memory_limit - stats_.pool_bytes;
  const uint64_t available = RoundDown(headroom, bfc::kMinAllocationSize);
  if (rounded > available) return false;

  bool increased_region_size = false;
  while (rounded > region_bytes_) {
    region_bytes_ = bfc::DoubledRegionBytes(region_bytes_);
    increased_region_size = true;
  }
  uint64_t bytes = std::min(region_bytes_, available);
  size_t bytes_received = 0;
  void* ptr = upstream_->Alloc(alignment, bytes, &bytes_received);
  // Refused: ask for less, strictly less each time, down to the request.
  while (ptr == nullptr) {
    bytes = bfc::BackpedalBytes(bytes);
    if (bytes < rounded) return false;
    ptr = upstream_->Alloc(alignment, bytes, &bytes_received);
  }
  // Beyond the limit doubling changes nothing (requests are capped by it).
  if (!increased_region_size && region_bytes_ < config_.memory_limit) {
    region_bytes_ = bfc::DoubledRegionBytes(region_bytes_);
  }

  const uint64_t usable = RoundDown(bytes_received, bfc::kMinAllocationSize);
  if (reinterpret_cast<uint64_t>(ptr) % bfc::kMinAllocationSize != 0 ||
      usable == 0) {
    // An upstream breaking its contract (misaligned or empty region): return it
    // unused.
    upstream_->Free(ptr, bytes_received);
    return false;
  }
  stats_.pool_bytes += bytes_received;
  stats_.peak_pool_bytes = std::max(stats_.peak_pool_bytes, stats_.pool_bytes);
  AddMemory(ptr, bytes_received);
  return true;
}

void BfcCore::AddMemory(void* ptr, uint64_t bytes_received) {
  const uint64_t address = reinterpret_cast<uint64_t>(ptr);
  const uint64_t usable = RoundDown(bytes_received, bfc::kMinAllocationSize);
  const ChunkHandle handle = map_.NewChunk();
  BfcChunk& chunk = map_.chunk(handle);
  chunk.address = address;
  chunk.size = usable;
  BfcRegion* region =
      coalesce_regions_ ? map_.RegionEndingAt(address) : nullptr;
  if (region != nullptr && usable == bytes_received) {
    // Contiguous with an existing region: grow it and link the new chunk last.
    ChunkHandle last = region->first_chunk;
    while (map_.chunk(last).next != kInvalidChunk) last = map_.chunk(last).next;
    map_.chunk(last).next = handle;
    map_.chunk(handle).prev = last;
    region->end += usable;
    region->pieces.push_back({ptr, bytes_received});
  } else {
    map_.AddRegion(ptr, bytes_received, handle).end = address + usable;
  }
  InsertFree(TryToCoalesce(handle, /*ignore_freed_at=*/false));
}

std::vector<uint64_t> BfcCore::FreeRegionStarts() const {
  std::vector<uint64_t> starts;
  for (const BfcRegion& region : map_.regions()) {
    bool any_in_use = false;
    for (ChunkHandle h = region.first_chunk; h != kInvalidChunk && !any_in_use;
         h = map_.chunk(h).next) {
      any_in_use = map_.chunk(h).in_use();
    }
    if (!any_in_use) starts.push_back(region.begin);
  }
  return starts;
}

bool BfcCore::DeallocateFreeRegions(uint64_t rounded) {
  if (!config_.garbage_collection) return false;
  const std::vector<uint64_t> starts = FreeRegionStarts();
  uint64_t total_free = 0;
  for (const BfcRegion& region : map_.regions()) {
    if (std::binary_search(starts.begin(), starts.end(), region.begin)) {
      for (const UpstreamPiece& piece : region.pieces)
        total_free += piece.bytes;
    }
  }
  if (total_free == 0) return false;
  // Only worth it when the freed memory plus the headroom can hold the request.
  const uint64_t headroom = stats_.pool_bytes >= config_.memory_limit
                                ? 0
                                : config_.memory_limit - stats_.pool_bytes;
  if (rounded > headroom + total_free) return false;
  DeallocateRegions(starts);
  return true;
}

bool BfcCore::ReleaseFreeRegions() {
  const std::vector<uint64_t> starts = FreeRegionStarts();
  if (starts.empty()) return false;
  DeallocateRegions(starts);
  return true;
}

void BfcCore::DeallocateRegions(const std::vector<uint64_t>& region_starts) {
  for (const uint64_t start : region_starts) {
    const BfcRegion* region = map_.RegionContaining(start);
    ChunkHandle h = region->first_chunk;
    while (h != kInvalidChunk) {
      const ChunkHandle next = map_.chunk(h).next;
      RemoveFree(h);
      map_.ReleaseChunk(h);
      h = next;
    }
    for (auto piece = region->pieces.rbegin(); piece != region->pieces.rend();
         ++piece) {
      upstream_->Free(piece->ptr, piece->bytes);
      stats_.pool_bytes -= piece->bytes;
    }
    map_.RemoveRegion(start);
  }
}

}  // namespace tensormem::internal
