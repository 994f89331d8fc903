// Timestamped frees: chunks freed while the runtime may still use them.
//
// With a timing counter, a freed chunk is stamped and kept apart: it is not
// merged with its neighbours, and only callers that wait for work up to its
// stamp (`freed_before`) may reuse it. When the safe frontier passes the stamp
// the chunk is merged as usual; when an allocation would otherwise fail, the
// unsafe chunks are merged anyway until one is large enough.
#include <vector>

#include "alloc/bfc_core.h"

namespace tensormem::internal {

bool BfcCore::SetSafeFrontier(uint64_t frontier) {
  uint64_t current = safe_frontier_.load(std::memory_order_relaxed);
  while (frontier > current) {
    if (safe_frontier_.compare_exchange_weak(current, frontier,
                                             std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

bool BfcCore::MergeTimestampedChunks(uint64_t required_bytes) {
  const uint64_t frontier = safe_frontier_.load(std::memory_order_relaxed);
  const auto is_current = [this](const QueuedChunk& queued) {
    const BfcChunk& chunk = map_.chunk(queued.handle);
    return chunk.generation == queued.generation && chunk.is_free();
  };
  std::vector<QueuedChunk> to_merge;
  std::deque<QueuedChunk> still_unsafe;
  for (const QueuedChunk& queued : timestamped_chunks_) {
    // Chunks merged away or reused since they were queued are dropped.
    if (!is_current(queued)) continue;
    BfcChunk& chunk = map_.chunk(queued.handle);
    if (chunk.freed_at_count > 0 && chunk.freed_at_count < frontier)
      chunk.freed_at_count = 0;
    if (chunk.freed_at_count == 0 || required_bytes > 0) {
      to_merge.push_back(queued);
    } else {
      still_unsafe.push_back(queued);
    }
  }
  timestamped_chunks_.swap(still_unsafe);

  bool satisfied = required_bytes == 0;
  for (const QueuedChunk& queued : to_merge) {
    if (!is_current(queued)) continue;
    const bool safe = map_.chunk(queued.handle).freed_at_count == 0;
    if (!safe && satisfied) {
      // A large enough chunk exists: keep the remaining unsafe ones apart.
      timestamped_chunks_.push_back(queued);
      continue;
    }
    RemoveFree(queued.handle);
    // Neighbours may have become safe together, so merge until nothing is
    // left to merge (one step, as in TensorFlow, can leave free chunks apart).
    ChunkHandle merged = queued.handle;
    uint64_t size_before;
    do {
      size_before = map_.chunk(merged).size;
      merged = TryToCoalesce(merged, /*ignore_freed_at=*/!safe);
    } while (map_.chunk(merged).size != size_before);
    InsertFree(merged);
    // A chunk still carrying a stamp must be revisited when the frontier moves.
    QueueTimestamped(merged);
    if (required_bytes > 0 && map_.chunk(merged).size >= required_bytes)
      satisfied = true;
  }
  return satisfied;
}

}  // namespace tensormem::internal
