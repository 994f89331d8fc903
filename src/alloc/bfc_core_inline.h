// The hot steps of BfcCore (serve a fit, free, split, merge), inline.
//
// Included by the allocator's request path (bfc_allocator.cc), so that an
// allocation and a free are each one function: a call's saving and restoring
// of registers costs as much as a step's work. Also by the engine files whose
// general paths use them (bfc_core.cc, bfc_decommit.cc).
//
//   #include "alloc/bfc_core_inline.h"
//   if (!core->FreeIfLive(ptr)) status = core->DiagnoseBadFree(ptr);
#ifndef TENSORMEM_SRC_ALLOC_BFC_CORE_INLINE_H_
#define TENSORMEM_SRC_ALLOC_BFC_CORE_INLINE_H_

#include <algorithm>

#include "alloc/bfc_core.h"
#include "tensormem/alloc/bfc_policy.h"

namespace tensormem::internal {

[[gnu::always_inline]] inline void* BfcCore::ServeFit(const FreeChunkKey& fit,
                                                      uint64_t bytes,
                                                      uint64_t rounded,
                                                      uint64_t alignment,
                                                      int pool) {
  ChunkHandle handle = fit.handle;
  if (bfc::AlignmentPadding(fit.address, alignment) != 0) {
    handle = TakeAligned(fit, rounded, alignment, pool);
  } else if (ShouldSplit(fit.size, rounded, pool)) {
    // The tail takes the chunk's place in the index: one update, not two.
    const ChunkHandle tail = SplitChunk(handle, rounded);
    const BfcChunk& tail_chunk = map_.chunk(tail);
    const FreeChunkKey tail_key = tail_chunk.Key(tail);
    WithIndex(
        pool, [&](auto& any) __attribute__((always_inline)) {
          any.Replace(fit, tail_key);
        });
    QueueTimestamped(tail);
  } else {
    WithIndex(
        pool, [&](auto& any)
                  __attribute__((always_inline)) { any.Erase(fit); });
  }
  return MarkInUse(handle, bytes);
}

[[gnu::always_inline]] inline void* BfcCore::ServeSlot(const FreeSlot& fit,
                                                       uint64_t bytes,
                                                       uint64_t rounded) {
  const ChunkHandle handle = fit.handle;
  if (bfc::AlignmentPadding(fit.address, bfc::kMinAllocationSize) != 0)
    return ServeFit(fit.key(), bytes, rounded, bfc::kMinAllocationSize, 0);
  if (ShouldSplit(fit.size, rounded, /*pool=*/0)) {
    const ChunkHandle tail = SplitChunk(handle, rounded);
    single_fast_index_->ReplaceSlot(fit, map_.chunk(tail).Key(tail));
    QueueTimestamped(tail);
  } else {
    single_fast_index_->EraseSlot(fit);
  }
  return MarkInUse(handle, bytes);
}

// Inlined: called once per allocation from ServeFit.
[[gnu::always_inline]] inline void* BfcCore::MarkInUse(ChunkHandle handle,
                                                       uint64_t bytes) {
  BfcChunk& chunk = map_.chunk(handle);
  chunk.requested_size = bytes;
  chunk.allocation_id = next_allocation_id_++;
  map_.AddLive(chunk.address, handle);
  ++stats_.num_allocs;
  stats_.bytes_in_use += chunk.size;
  stats_.bytes_requested += bytes;
  stats_.peak_bytes_in_use =
      std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  stats_.largest_alloc_size = std::max(stats_.largest_alloc_size, chunk.size);
  return reinterpret_cast<void*>(chunk.address);
}

[[gnu::always_inline]] inline bool BfcCore::FreeIfLive(void* ptr) {
  const ChunkHandle handle = map_.TakeLive(reinterpret_cast<uint64_t>(ptr));
  if (handle == kInvalidChunk) return false;
  BfcChunk& chunk = map_.chunk(handle);
  chunk.allocation_id = BfcChunk::kFreeChunkId;
  stats_.bytes_requested -= chunk.requested_size;
  chunk.requested_size = 0;
  stats_.bytes_in_use -= chunk.size;
  IndexFreed(handle);
  return true;
}

[[gnu::always_inline]] inline void BfcCore::IndexFreed(ChunkHandle handle) {
  BfcChunk& chunk = map_.chunk(handle);
  if (timing_counter_ != nullptr) {
    // Kept apart until the frontier passes its stamp (see
    // MergeTimestampedChunks).
    chunk.freed_at_count = timing_counter_->next();
    InsertFree(handle);
    timestamped_chunks_.push_back({handle, chunk.generation});
  } else {
    chunk.freed_at_count = 0;
    const uint64_t address = chunk.address;
    MergeAndIndex(handle);
    if (releases_before_growth_) NoteFreed(address);
  }
}

// Inlined: the rest of every free.
[[gnu::always_inline]] inline void BfcCore::MergeAndIndex(ChunkHandle handle) {
  const BfcChunk& chunk = map_.chunk(handle);
  const ChunkHandle next = chunk.next;
  const ChunkHandle prev = chunk.prev;
  const bool merge_next = next != kInvalidChunk && map_.chunk(next).Mergeable();
  const bool merge_prev = prev != kInvalidChunk && map_.chunk(prev).Mergeable();
  if (!merge_next && !merge_prev) {
    InsertFree(handle);
    return;
  }
  // The merged chunk takes the index entry of a neighbour it absorbs: one
  // update in place instead of an erase per neighbour and an insert.
  const ChunkHandle entry = merge_prev ? prev : next;
  const FreeChunkKey entry_key = map_.chunk(entry).Key(entry);
  if (merge_next) {
    if (merge_prev) RemoveFree(next);
    Merge(handle, next);
  }
  ChunkHandle merged = handle;
  if (merge_prev) {
    Merge(prev, handle);
    merged = prev;
  }
  const BfcChunk& result = map_.chunk(merged);
  const FreeChunkKey merged_key = result.Key(merged);
  WithIndex(
      result.pool, [&](auto& any) __attribute__((always_inline)) {
        any.Replace(entry_key, merged_key);
      });
}

// Inlined: on the hot path of nearly every allocation.
[[gnu::always_inline]] inline ChunkHandle BfcCore::SplitChunk(
    ChunkHandle handle, uint64_t head_bytes) {
  const ChunkHandle tail =
      map_.NewChunk();  // may move chunks: take references after
  BfcChunk& head = map_.chunk(handle);
  BfcChunk& rest = map_.chunk(tail);
  rest.address = head.address + head_bytes;
  rest.size = head.size - head_bytes;
  rest.freed_at_count = head.freed_at_count;
  rest.pool = head.pool;
  rest.prev = handle;
  rest.next = head.next;
  if (head.next != kInvalidChunk) {
    map_.chunk(head.next).prev = tail;
  } else {
    map_.MutableRegionContaining(head.address)->last_chunk = tail;
  }
  head.next = tail;
  head.size = head_bytes;
  return tail;
}

// Inlined: on the hot path of nearly every free.
[[gnu::always_inline]] inline void BfcCore::Merge(ChunkHandle first,
                                                  ChunkHandle second) {
  BfcChunk& low = map_.chunk(first);
  const BfcChunk& high = map_.chunk(second);
  low.size += high.size;
  low.next = high.next;
  low.freed_at_count = std::max(low.freed_at_count, high.freed_at_count);
  if (high.next != kInvalidChunk) {
    map_.chunk(high.next).prev = first;
  } else {
    map_.MutableRegionContaining(low.address)->last_chunk = first;
  }
  map_.ReleaseChunk(second);
}

}  // namespace tensormem::internal

#endif  // TENSORMEM_SRC_ALLOC_BFC_CORE_INLINE_H_
