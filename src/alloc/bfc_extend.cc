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

uint64_t BfcCore::Headroom() const {
  // An upstream may hand back more than asked, so the pool can exceed the
  // limit.
  return stats_.pool_bytes >= config_.memory_limit
             ? 0
             : config_.memory_limit - stats_.pool_bytes;
}

bool BfcCore::Extend(uint64_t rounded, uint64_t alignment, int pool,
                     bool use_free_tail, bool* relied_on_tail) {
  const uint64_t headroom = Headroom();
  GrowthRequest request;
  request.rounded = rounded;
  request.alignment = alignment;
  request.pool = PolicyPool(pool);
  request.headroom = RoundDown(headroom, bfc::kMinAllocationSize);
  // Padding for a larger alignment could eat the tail: count on it only for
  // plain requests.
  if (use_free_tail && alignment == bfc::kMinAllocationSize)
    request.free_tail = FreeTailBytes(pool);
  if (releases_before_growth_) ReleaseBeforeGrowth();
  uint64_t bytes = policy_->RegionBytes(request);
  // The limit holds whatever a policy asks for.
  if (bytes == 0 || bytes > request.headroom) return false;
  size_t bytes_received = 0;
  void* ptr = upstream_->Alloc(bytes, alignment, &bytes_received);
  const uint64_t padding = alignment - bfc::kMinAllocationSize;
  if (ptr == nullptr && alignment > bfc::kMinAllocationSize &&
      padding <= request.headroom && rounded <= request.headroom - padding) {
    // An upstream that cannot align this far (cuMemAlloc stops at 256
    // bytes): a region larger by the padding, aligned inside by the search.
    const uint64_t padded =
        std::min<uint64_t>(bytes, request.headroom - padding) + padding;
    ptr = upstream_->Alloc(padded, bfc::kMinAllocationSize, &bytes_received);
    if (ptr != nullptr) bytes = padded;
  }
  // Refused: ask for less, strictly less each time, as long as the policy
  // has a smaller size to try.
  while (ptr == nullptr) {
    bytes = policy_->SmallerRegionBytes(bytes, request);
    if (bytes == 0) return false;
    ptr = upstream_->Alloc(bytes, alignment, &bytes_received);
  }
  policy_->RegionAdded(request);
  if (relied_on_tail != nullptr) *relied_on_tail = bytes < rounded;

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
  AddMemory(ptr, bytes_received, pool);
  return true;
}

ChunkHandle BfcCore::LastChunk(const BfcRegion& region) const {
  return region.last_chunk;
}

uint64_t BfcCore::FreeTailBytes(int pool) const {
  if (!coalesce_regions_) return 0;
  // A coalescing upstream extends its highest region first.
  const BfcRegion* highest = nullptr;
  for (const BfcRegion& region : map_.regions()) {
    if (region.pool == static_cast<uint32_t>(pool)) highest = &region;
  }
  if (highest == nullptr) return 0;
  const BfcChunk& last = map_.chunk(LastChunk(*highest));
  return last.Mergeable() ? last.size : 0;
}

bool BfcCore::AddMemory(void* ptr, uint64_t bytes_received, int pool) {
  const uint64_t address = reinterpret_cast<uint64_t>(ptr);
  const uint64_t usable = RoundDown(bytes_received, bfc::kMinAllocationSize);
  BfcRegion* region =
      coalesce_regions_ ? map_.RegionEndingAt(address) : nullptr;
  const bool joins = region != nullptr && usable == bytes_received &&
                     region->pool == static_cast<uint32_t>(pool);
  if (!joins) {
    const ChunkHandle handle = NewFreeChunk(address, usable, pool);
    BfcRegion& added = map_.AddRegion(ptr, bytes_received, handle);
    added.end = address + usable;
    added.pool = pool;
    InsertFree(handle);
    grown_chunk_ = handle;
    return false;
  }
  // Contiguous with an existing region: it grows.
  region->end += usable;
  region->pieces.push_back({ptr, bytes_received});
  const ChunkHandle last = LastChunk(*region);
  BfcChunk& tail = map_.chunk(last);
  if (tail.Mergeable()) {
    // The free tail takes the new memory in place (growth's common case).
    RemoveFree(last);
    map_.chunk(last).size += usable;
    InsertFree(last);
    grown_chunk_ = last;
    return true;
  }
  const ChunkHandle handle = NewFreeChunk(address, usable, pool);
  map_.chunk(last).next = handle;
  map_.chunk(handle).prev = last;
  region->last_chunk = handle;
  InsertFree(handle);
  grown_chunk_ = handle;
  return true;
}

ChunkHandle BfcCore::NewFreeChunk(uint64_t address, uint64_t size, int pool) {
  const ChunkHandle handle = map_.NewChunk();
  BfcChunk& chunk = map_.chunk(handle);
  chunk.address = address;
  chunk.size = size;
  chunk.pool = pool;
  return handle;
}

void BfcCore::NoteFreed(uint64_t address) {
  BfcRegion* region = map_.MutableRegionContaining(address);
  const BfcChunk& first = map_.chunk(region->first_chunk);
  if (first.is_free() && first.next == kInvalidChunk)
    region->freed_at_request = requests_[PolicyPool(region->pool)];
}

FreeRegion BfcCore::DescribeFree(const BfcRegion& region) const {
  const int pool = PolicyPool(region.pool);
  return {region.begin, region.size(), pool,
          static_cast<int>(region.pool) / pools_per_stream_,
          requests_.empty() ? 0 : requests_[pool] - region.freed_at_request};
}

void BfcCore::ReleaseBeforeGrowth() {
  std::vector<FreeRegion> free_regions;
  for (const BfcRegion& region : map_.regions()) {
    const BfcChunk& first = map_.chunk(region.first_chunk);
    if (!first.Mergeable() || first.next != kInvalidChunk) continue;
    free_regions.push_back(DescribeFree(region));
  }
  DeallocateRegions(policy_->RegionsToRelease(stats_.pool_bytes, free_regions));
}

void* BfcCore::ReleaseForRequestAndGrow(uint64_t bytes, uint64_t rounded,
                                        uint64_t alignment,
                                        uint64_t freed_before, int pool) {
  std::vector<FreeRegion> free_regions;
  for (const uint64_t start : FreeRegionStarts()) {
    const BfcRegion& region = *map_.RegionContaining(start);
    if (region.pool == static_cast<uint32_t>(pool))
      free_regions.push_back(DescribeFree(region));
  }
  std::vector<uint64_t> release;
  const bool retry = policy_->ReleaseForRequest(rounded, free_regions, release);
  DeallocateRegions(release);
  if (!retry) return nullptr;
  return GrowAndFind(bytes, rounded, alignment, freed_before, pool);
}

std::vector<uint64_t> BfcCore::InReleaseOrder(
    const std::vector<uint64_t>& starts) const {
  std::vector<FreeRegion> regions;
  for (const uint64_t start : starts)
    regions.push_back(DescribeFree(*map_.RegionContaining(start)));
  policy_->OrderForRelease(regions);
  std::vector<uint64_t> ordered;
  for (const FreeRegion& region : regions) ordered.push_back(region.start);
  return ordered;
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
  if (!config_.garbage_collection &&
      !policy_->ReleasesFreeRegionsBeforeFailing()) {
    return false;
  }
  const std::vector<uint64_t> starts = FreeRegionStarts();
  uint64_t total_free = 0;
  for (const BfcRegion& region : map_.regions()) {
    if (std::binary_search(starts.begin(), starts.end(), region.begin)) {
      for (const UpstreamPiece& piece : region.pieces)
        total_free += piece.bytes;
    }
  }
  const uint64_t trimmable = TrailingFreePieceBytes();
  // The engine's garbage collection retries only when freeing can make room
  // (the freed memory plus the headroom holds the request); a policy that
  // always releases retries in any case.
  const bool always = policy_->ReleasesFreeRegionsBeforeFailing();
  if (!always && (total_free + trimmable == 0 ||
                  rounded > Headroom() + total_free + trimmable)) {
    return false;
  }
  DeallocateRegions(InReleaseOrder(starts));
  TrimTrailingPieces();
  return true;
}

bool BfcCore::ReleaseFreeRegions() {
  const std::vector<uint64_t> starts = FreeRegionStarts();
  DeallocateRegions(InReleaseOrder(starts));
  const uint64_t trimmed = TrimTrailingPieces();
  return !starts.empty() || trimmed > 0;
}

// A trailing piece can go back when the region's last chunk is free, safe to
// reuse, and starts at or before the piece: nothing in use lies inside it.
uint64_t BfcCore::TrailingFreePieceBytes() const {
  uint64_t bytes = 0;
  for (const BfcRegion& region : map_.regions()) {
    const BfcChunk& chunk = map_.chunk(LastChunk(region));
    if (!chunk.is_free() || chunk.freed_at_count != 0) continue;
    for (size_t i = region.pieces.size() - 1; i > 0; --i) {
      if (reinterpret_cast<uint64_t>(region.pieces[i].ptr) < chunk.address) {
        break;
      }
      bytes += region.pieces[i].bytes;
    }
  }
  return bytes;
}

uint64_t BfcCore::TrimTrailingPieces() {
  uint64_t released = 0;
  std::vector<uint64_t> ends;
  for (const BfcRegion& region : map_.regions()) {
    if (region.pieces.size() > 1) ends.push_back(region.end);
  }
  for (const uint64_t end : ends) {
    BfcRegion* region = map_.RegionEndingAt(end);
    ChunkHandle last = LastChunk(*region);
    // The first piece stays: a region with nothing in use goes whole.
    while (region->pieces.size() > 1) {
      BfcChunk& chunk = map_.chunk(last);
      const UpstreamPiece piece = region->pieces.back();
      const uint64_t piece_start = reinterpret_cast<uint64_t>(piece.ptr);
      if (!chunk.is_free() || chunk.freed_at_count != 0 ||
          chunk.address > piece_start) {
        break;
      }
      RemoveFree(last);
      if (chunk.address == piece_start) {
        const ChunkHandle prev = chunk.prev;
        map_.chunk(prev).next = kInvalidChunk;
        map_.ReleaseChunk(last);
        last = prev;
        region->last_chunk = prev;
      } else {
        chunk.size -= piece.bytes;
        InsertFree(last);
      }
      region->end -= piece.bytes;
      region->pieces.pop_back();
      upstream_->Free(piece.ptr, piece.bytes);
      stats_.pool_bytes -= piece.bytes;
      released += piece.bytes;
    }
  }
  return released;
}

void BfcCore::DeallocateRegions(const std::vector<uint64_t>& region_starts) {
  for (const uint64_t start : region_starts) {
    const BfcRegion* region = map_.RegionContaining(start);
    ChunkHandle h = region->first_chunk;
    while (h != kInvalidChunk) {
      const BfcChunk& chunk = map_.chunk(h);
      const ChunkHandle next = chunk.next;
      // Decommitted memory is no longer counted in the pool.
      if (chunk.decommitted()) {
        stats_.pool_bytes += chunk.size;
        decommitted_bytes_ -= chunk.size;
        ForgetDecommitted(h);
      } else {
        RemoveFree(h);
      }
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
