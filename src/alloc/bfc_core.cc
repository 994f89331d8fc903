#include "alloc/bfc_core.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "tensormem/alloc/bfc_policy.h"

namespace tensormem::internal {

BfcCore::BfcCore(SubAllocator* upstream, const Config& config,
                 std::unique_ptr<AllocationPolicy> policy,
                 std::vector<std::unique_ptr<BfcFreeIndex>> indexes)
    : upstream_(upstream),
      config_(config),
      policy_(std::move(policy)),
      coalesce_regions_(upstream->SupportsCoalescing() &&
                        policy_->MergesRegions()),
      tail_kept_below_(policy_->TailKeptFromRequestsBelow()),
      decommit_granule_(ChooseDecommitGranule()),
      separates_streams_(policy_->SeparatesStreams()),
      pools_per_stream_(policy_->NumPools()),
      inline_(policy_->Inline()) {
  for (std::unique_ptr<BfcFreeIndex>& index : indexes)
    AddIndex(std::move(index));
  // Inline policies have one pool.
  if (inline_) single_fast_index_ = fast_indexes_.front();
  stats_.bytes_limit = config.memory_limit;
  if (separates_streams_) streams_.push_back(0);
}

void BfcCore::AddIndex(std::unique_ptr<BfcFreeIndex> index) {
  fast_indexes_.push_back(dynamic_cast<FastFreeIndex*>(index.get()));
  indexes_.push_back(std::move(index));
}

int BfcCore::PoolOf(int32_t stream, uint64_t rounded) {
  const int pool = policy_->PoolFor(rounded);
  if (!separates_streams_) return pool;
  // Streams are few (a handful per device): a linear search is cheapest.
  const auto known = std::find(streams_.begin(), streams_.end(), stream);
  const int slot = static_cast<int>(known - streams_.begin());
  if (known == streams_.end()) {
    streams_.push_back(stream);
    for (int i = 0; i < pools_per_stream_; ++i)
      AddIndex(std::make_unique<FastFreeIndex>());
  }
  return slot * pools_per_stream_ + pool;
}

void* BfcCore::Allocate(uint64_t bytes, uint64_t alignment,
                        uint64_t freed_before, int32_t stream) {
  const std::optional<uint64_t> rounded_or = RoundedSize(bytes);
  if (!rounded_or || *rounded_or > config_.memory_limit) {
    RecordFailure(bytes, rounded_or.value_or(0), alignment, freed_before);
    return nullptr;
  }
  const uint64_t rounded = *rounded_or;
  // Inline policies have one pool and share it across streams.
  const int pool = inline_ ? 0 : PoolOf(stream, rounded);
  if (!timestamped_chunks_.empty()) MergeTimestampedChunks(0);
  if (void* ptr = FindChunk(bytes, rounded, alignment, freed_before, pool))
    return ptr;
  if (void* ptr = GrowAndFind(bytes, rounded, alignment, freed_before, pool))
    return ptr;
  // Rather than fail, force-merge chunks whose frees are not yet known to be
  // safe, for callers that do not care when their memory was freed.
  if (freed_before == 0 && !timestamped_chunks_.empty() &&
      MergeTimestampedChunks(rounded)) {
    if (void* ptr = FindChunk(bytes, rounded, alignment, freed_before, pool))
      return ptr;
  }
  // Returning empty regions may let the upstream hand back one larger region.
  if (DeallocateFreeRegions(rounded)) {
    ++stats_.num_alloc_retries;
    if (void* ptr = GrowAndFind(bytes, rounded, alignment, freed_before, pool))
      return ptr;
  }
  RecordFailure(bytes, rounded, alignment, freed_before);
  return nullptr;
}

void* BfcCore::GrowAndFind(uint64_t bytes, uint64_t rounded, uint64_t alignment,
                           uint64_t freed_before, int pool) {
  if (decommit_granule_ > 0) {
    if (void* ptr =
            ReuseDecommitted(bytes, rounded, alignment, freed_before, pool)) {
      return ptr;
    }
  }
  bool relied_on_tail = false;
  if (!Extend(rounded, alignment, pool, /*use_free_tail=*/true,
              &relied_on_tail)) {
    return nullptr;
  }
  if (void* ptr = FindChunk(bytes, rounded, alignment, freed_before, pool))
    return ptr;
  // Memory sized to extend a free tail did not land next to it (or the tail
  // was not reusable): grow once more by the whole request.
  if (!relied_on_tail ||
      !Extend(rounded, alignment, pool, /*use_free_tail=*/false, nullptr)) {
    return nullptr;
  }
  return FindChunk(bytes, rounded, alignment, freed_before, pool);
}

void* BfcCore::FindChunk(uint64_t bytes, uint64_t rounded, uint64_t alignment,
                         uint64_t freed_before, int pool) {
  const bool filter_by_time = freed_before > 0;
  const bool filter_by_alignment = alignment > bfc::kMinAllocationSize;
  std::optional<FreeChunkKey> fit;
  if (!filter_by_time && !filter_by_alignment) {
    fit = WithIndex(pool, [&](auto& any) { return any.FindBestFit(rounded); });
  } else {
    fit = BestFitWhere(pool, rounded, [&](const FreeChunkKey& key) {
      if (filter_by_time &&
          freed_before < map_.chunk(key.handle).freed_at_count)
        return false;
      return key.size - rounded >=
             bfc::AlignmentPadding(key.address, alignment);
    });
  }
  if (!fit) return nullptr;
  PreferHoleToTail(*fit, pool, rounded, alignment, freed_before);
  if (!inline_ && !policy_->MayServe(fit->size, rounded)) return nullptr;
  return ServeFit(*fit, bytes, rounded, alignment, pool);
}

void* BfcCore::ServeFit(const FreeChunkKey& fit, uint64_t bytes,
                        uint64_t rounded, uint64_t alignment, int pool) {
  ChunkHandle handle = fit.handle;
  if (bfc::AlignmentPadding(fit.address, alignment) != 0) {
    handle = TakeAligned(fit, rounded, alignment, pool);
  } else if (ShouldSplit(fit.size, rounded, pool)) {
    // The tail takes the chunk's place in the index: one update, not two.
    const ChunkHandle tail = SplitChunk(handle, rounded);
    const BfcChunk& tail_chunk = map_.chunk(tail);
    const FreeChunkKey tail_key = tail_chunk.Key(tail);
    WithIndex(pool, [&](auto& any) { any.Replace(fit, tail_key); });
    QueueTimestamped(tail);
  } else {
    WithIndex(pool, [&](auto& any) { any.Erase(fit); });
  }
  return MarkInUse(handle, bytes);
}

ChunkHandle BfcCore::TakeAligned(const FreeChunkKey& fit, uint64_t rounded,
                                 uint64_t alignment, int pool) {
  RemoveFree(fit.handle);
  // The unaligned prefix stays behind as a free chunk of its own.
  const ChunkHandle handle =
      SplitChunk(fit.handle, bfc::AlignmentPadding(fit.address, alignment));
  InsertFree(fit.handle);
  if (ShouldSplit(map_.chunk(handle).size, rounded, pool)) {
    const ChunkHandle tail = SplitChunk(handle, rounded);
    InsertFree(tail);
    QueueTimestamped(tail);
  }
  return handle;
}

std::optional<FreeChunkKey> BfcCore::FindFitOutsideTails(
    int pool, uint64_t rounded, uint64_t alignment,
    uint64_t freed_before) const {
  return BestFitWhere(pool, rounded, [&](const FreeChunkKey& key) {
    const BfcChunk& chunk = map_.chunk(key.handle);
    if (chunk.next == kInvalidChunk) return false;
    if (freed_before > 0 && freed_before < chunk.freed_at_count) return false;
    return key.size - rounded >= bfc::AlignmentPadding(key.address, alignment);
  });
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

bool BfcCore::FreeIfLive(void* ptr) {
  const ChunkHandle handle = map_.TakeLive(reinterpret_cast<uint64_t>(ptr));
  if (handle == kInvalidChunk) return false;
  BfcChunk& chunk = map_.chunk(handle);
  chunk.allocation_id = BfcChunk::kFreeChunkId;
  stats_.bytes_requested -= chunk.requested_size;
  chunk.requested_size = 0;
  stats_.bytes_in_use -= chunk.size;
  if (timing_counter_ != nullptr) {
    // Kept apart until the frontier passes its stamp (see
    // MergeTimestampedChunks).
    chunk.freed_at_count = timing_counter_->next();
    InsertFree(handle);
    timestamped_chunks_.push_back({handle, chunk.generation});
  } else {
    chunk.freed_at_count = 0;
    MergeAndIndex(handle);
  }
  return true;
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
  WithIndex(result.pool,
            [&](auto& any) { any.Replace(entry_key, merged_key); });
}

absl::Status BfcCore::DiagnoseBadFree(const void* ptr) const {
  const uint64_t address = reinterpret_cast<uint64_t>(ptr);
  const ChunkHandle containing = map_.FindContainingChunk(address);
  if (containing == kInvalidChunk) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "free of pointer 0x%x, which this allocator never handed out",
        address));
  }
  const BfcChunk& chunk = map_.chunk(containing);
  if (chunk.in_use()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "free of interior pointer 0x%x: it lies %d bytes into the block at "
        "0x%x of %d bytes",
        address, address - chunk.address, chunk.address, chunk.size));
  }
  return absl::FailedPreconditionError(
      absl::StrFormat("free of pointer 0x%x, which is not allocated (already "
                      "freed, or never a block start)",
                      address));
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

ChunkHandle BfcCore::TryToCoalesce(ChunkHandle handle, bool ignore_freed_at) {
  ChunkHandle result = handle;
  const ChunkHandle next = map_.chunk(handle).next;
  if (next != kInvalidChunk && map_.chunk(next).is_free() &&
      (ignore_freed_at || map_.chunk(next).freed_at_count == 0)) {
    RemoveFree(next);
    Merge(handle, next);
  }
  const ChunkHandle prev = map_.chunk(handle).prev;
  if (prev != kInvalidChunk && map_.chunk(prev).is_free() &&
      (ignore_freed_at || map_.chunk(prev).freed_at_count == 0)) {
    RemoveFree(prev);
    Merge(prev, handle);
    result = prev;
  }
  return result;
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

// The slow paths in other files (decommit) split and merge through these:
// the versions above are inline in this file only.
ChunkHandle BfcCore::SplitChunkOutOfLine(ChunkHandle handle,
                                         uint64_t head_bytes) {
  return SplitChunk(handle, head_bytes);
}

void BfcCore::MergeOutOfLine(ChunkHandle first, ChunkHandle second) {
  Merge(first, second);
}

void BfcCore::QueueStamped(ChunkHandle handle) {
  timestamped_chunks_.push_back({handle, map_.chunk(handle).generation});
}

const BfcChunk* BfcCore::FindLiveChunk(const void* ptr) const {
  const ChunkHandle handle = map_.FindLive(reinterpret_cast<uint64_t>(ptr));
  return handle == kInvalidChunk ? nullptr : &map_.chunk(handle);
}

}  // namespace tensormem::internal
