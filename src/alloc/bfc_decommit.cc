// Giving memory back inside regions (decommit) and taking it again
// (recommit), for policies with a decommit granule over upstreams that can.
//
// With growth, best fit leaves holes that a later, larger request cannot use:
// the pool grows past them and keeps them, so it ends well above peak live
// bytes. When growing would raise the pool's high-water mark, the whole
// granules inside free chunks that span two or more go back to the upstream
// first (their addresses stay, as a decommitted chunk), the largest holes
// first and as many as keep the pool at that mark; growth then takes what costs
// fewer new bytes: extending the last region's free tail, or recommitting part
// of a decommitted chunk next to free memory. The pool then holds live bytes
// plus partial granules at the edges of holes. A GPU's virtual memory
// management does this with physical pages mapped into a reservation.
#include <algorithm>
#include <vector>

#include "alloc/bfc_core.h"
#include "alloc/bfc_core_inline.h"
#include "tensormem/core/checked_math.h"

namespace tensormem::internal {

uint64_t BfcCore::ChooseDecommitGranule() const {
  const uint64_t granule = policy_->DecommitGranule();
  const uint64_t unit = upstream_->DecommitGranularity();
  // Growth must extend regions contiguously for a recommitted range and the
  // free tail to be one kind of choice.
  if (granule == 0 || unit == 0 || !coalesce_regions_) return 0;
  return granule % unit == 0 ? granule : 0;
}

uint64_t BfcCore::ExtensionBytes(uint64_t rounded, int pool) const {
  const uint64_t tail = FreeTailBytes(pool);
  return RoundUp(rounded > tail ? rounded - tail : 0, decommit_granule_);
}

void* BfcCore::ReuseDecommitted(uint64_t bytes, uint64_t rounded,
                                uint64_t alignment, uint64_t freed_before,
                                int pool) {
  // Decommitting costs upstream calls, and a decommitted hole is reused only
  // through this slow path: give holes back only when growing would raise
  // the pool's high-water mark, the figure decommitting is for.
  const uint64_t after_growth =
      stats_.pool_bytes + ExtensionBytes(rounded, pool);
  if (after_growth > stats_.peak_pool_bytes && decommit_to_hold_peak_)
    DecommitFreeGranules(pool, after_growth - stats_.peak_pool_bytes);
  if (decommitted_bytes_ == 0 || alignment != bfc::kMinAllocationSize)
    return nullptr;
  return RecommitAndFind(bytes, rounded, freed_before, pool,
                         /*even_if_costlier=*/HolesAtTheirBound());
}

void BfcCore::DecommitFreeGranules(int pool, uint64_t wanted, bool with_tails) {
  const uint64_t granule = decommit_granule_;
  // A hole goes back only when it spans this many whole granules. Measured
  // on the corpus: one-granule holes saved little and cut the free memory
  // around them into pieces that never merged again. vit_b_16 training,
  // replayed pass after pass into one allocator, crept from 1.017x to 1.129x
  // peak live with them (and its free index held hundreds of chunks of 1-16
  // MiB); without them it settles at 1.036x from the 10th pass, and every
  // other training trace within 4 MiB of its first pass.
  constexpr uint64_t kMinHoleGranules = 2;
  // (decommittable bytes, chunk), the largest first: the fewer holes go, the
  // fewer later requests take the slow path to recommit them.
  std::vector<std::pair<uint64_t, ChunkHandle>> candidates;
  // A region's free tail cuts nothing into pieces: one granule is enough.
  // Only a free chunk that large can hold the whole granules: the index
  // visits just those (a filter that takes none sees them all).
  const uint64_t hole_bytes = kMinHoleGranules * granule;
  BestFitWhere(pool, with_tails ? granule : hole_bytes,
               [&](const FreeChunkKey& key) {
                 const BfcChunk& c = map_.chunk(key.handle);
                 const uint64_t begin = RoundUp(c.address, granule);
                 const uint64_t end = RoundDown(c.end(), granule);
                 const bool tail = c.next == kInvalidChunk;
                 const uint64_t least = tail ? granule : hole_bytes;
                 if (c.freed_at_count == 0 && (with_tails || !tail) &&
                     begin + least <= end)
                   candidates.emplace_back(end - begin, key.handle);
                 return false;
               });
  std::sort(
      candidates.begin(), candidates.end(), [&](const auto& a, const auto& b) {
        if (a.first != b.first) return a.first > b.first;
        return map_.chunk(a.second).address < map_.chunk(b.second).address;
      });
  // Splitting adds chunks, so the handles were collected first.
  uint64_t released = 0;
  for (const auto& [bytes, h] : candidates) {
    if (released >= wanted) break;
    if (DecommitInside(h)) released += bytes;
  }
}

bool BfcCore::DecommitAllFreeGranules() {
  if (decommit_granule_ == 0) return false;
  const uint64_t before = decommitted_bytes_;
  for (size_t pool = 0; pool < indexes_.size(); ++pool)
    DecommitFreeGranules(static_cast<int>(pool), UINT64_MAX,
                         /*with_tails=*/true);
  return decommitted_bytes_ > before;
}

bool BfcCore::DecommitHolesWhenShort(int pool) {
  if (decommit_granule_ == 0 || decommit_to_hold_peak_) return false;
  const uint64_t before = decommitted_bytes_;
  DecommitFreeGranules(pool, UINT64_MAX);
  return decommitted_bytes_ > before;
}

bool BfcCore::DecommitInside(ChunkHandle handle) {
  const BfcChunk& chunk = map_.chunk(handle);
  const uint64_t begin = RoundUp(chunk.address, decommit_granule_);
  const uint64_t end = RoundDown(chunk.end(), decommit_granule_);
  if (!upstream_->Decommit(reinterpret_cast<void*>(begin), end - begin))
    return false;
  RemoveFree(handle);
  ChunkHandle middle = handle;
  if (begin > map_.chunk(handle).address) {
    middle = SplitChunk(handle, begin - map_.chunk(handle).address);
    InsertFree(handle);
  }
  if (end < map_.chunk(middle).end()) {
    InsertFree(SplitChunk(middle, end - begin));
  }
  map_.chunk(middle).allocation_id = BfcChunk::kDecommittedChunkId;
  stats_.pool_bytes -= end - begin;
  decommitted_bytes_ += end - begin;
  decommitted_chunks_.push_back(middle);
  // Neighbouring decommitted chunks become one, so a recommit sees the
  // whole stretch.
  const ChunkHandle next = map_.chunk(middle).next;
  if (next != kInvalidChunk && map_.chunk(next).decommitted()) {
    ForgetDecommitted(next);
    Merge(middle, next);
  }
  const ChunkHandle prev = map_.chunk(middle).prev;
  if (prev != kInvalidChunk && map_.chunk(prev).decommitted()) {
    ForgetDecommitted(middle);
    Merge(prev, middle);
  }
  return true;
}

void BfcCore::ForgetDecommitted(ChunkHandle handle) {
  const auto it =
      std::find(decommitted_chunks_.begin(), decommitted_chunks_.end(), handle);
  *it = decommitted_chunks_.back();
  decommitted_chunks_.pop_back();
}

std::optional<BfcCore::RecommitChoice> BfcCore::CheapestRecommit(
    uint64_t rounded, int pool) const {
  const uint64_t granule = decommit_granule_;
  // Granules to recommit so that `have` free bytes reach `rounded`.
  const auto lacking = [&](uint64_t have) {
    return have >= rounded ? 0 : RoundUp(rounded - have, granule);
  };
  RecommitChoice best{.bytes = UINT64_MAX};
  uint64_t best_address = 0;
  // Ties go to the lowest address, whatever order the chunks come in.
  const auto consider = [&](const BfcChunk& chunk, ChunkHandle handle,
                            uint64_t offset, uint64_t bytes) {
    const uint64_t address = chunk.address + offset;
    if (bytes < best.bytes || (bytes == best.bytes && address < best_address)) {
      best = RecommitChoice{handle, offset, bytes};
      best_address = address;
    }
  };
  for (const ChunkHandle h : decommitted_chunks_) {
    const BfcChunk& chunk = map_.chunk(h);
    if (chunk.pool != static_cast<uint32_t>(pool)) continue;
    const uint64_t below = FreeBytesToMerge(chunk.prev);
    const uint64_t above = FreeBytesToMerge(chunk.next);
    // Its low end (joining the free chunk below), its high end (joining the
    // one above), or all of it (joining both).
    if (const uint64_t low = lacking(below); low > 0 && low <= chunk.size)
      consider(chunk, h, 0, low);
    if (const uint64_t high = lacking(above); high > 0 && high <= chunk.size)
      consider(chunk, h, chunk.size - high, high);
    if (below + chunk.size + above >= rounded)
      consider(chunk, h, 0, chunk.size);
  }
  if (best.bytes == UINT64_MAX) return std::nullopt;
  return best;
}

void* BfcCore::RecommitAndFind(uint64_t bytes, uint64_t rounded,
                               uint64_t freed_before, int pool,
                               bool even_if_costlier) {
  const std::optional<RecommitChoice> best = CheapestRecommit(rounded, pool);
  if (!best) return nullptr;
  const uint64_t headroom = Headroom();
  if (best->bytes > headroom) return nullptr;
  // On a tie the recommit wins, reusing addresses instead of taking new ones.
  const uint64_t extension = ExtensionBytes(rounded, pool);
  if (!even_if_costlier && extension < best->bytes && extension <= headroom)
    return nullptr;
  const uint64_t address = map_.chunk(best->chunk).address + best->offset;
  const ChunkHandle part =
      Recommit(best->chunk, address, address + best->bytes);
  if (part == kInvalidChunk) return nullptr;
  InsertFree(TryToCoalesce(part, /*ignore_freed_at=*/false));
  return FindChunk(bytes, rounded, bfc::kMinAllocationSize, freed_before, pool);
}

ChunkHandle BfcCore::Recommit(ChunkHandle handle, uint64_t begin,
                              uint64_t end) {
  const uint64_t bytes = end - begin;
  if (bytes > Headroom() ||
      !upstream_->Recommit(reinterpret_cast<void*>(begin), bytes)) {
    return kInvalidChunk;
  }
  ChunkHandle part = handle;
  if (begin > map_.chunk(handle).address) {
    part = SplitChunk(handle, begin - map_.chunk(handle).address);
  } else {
    ForgetDecommitted(part);
  }
  if (map_.chunk(part).size > bytes) {
    const ChunkHandle rest = SplitChunk(part, bytes);
    map_.chunk(rest).allocation_id = BfcChunk::kDecommittedChunkId;
    decommitted_chunks_.push_back(rest);
  }
  BfcChunk& recommitted = map_.chunk(part);
  recommitted.allocation_id = BfcChunk::kFreeChunkId;
  recommitted.freed_at_count = 0;
  stats_.pool_bytes += bytes;
  decommitted_bytes_ -= bytes;
  stats_.peak_pool_bytes = std::max(stats_.peak_pool_bytes, stats_.pool_bytes);
  return part;
}

}  // namespace tensormem::internal
