#include "alloc/bfc_core.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "alloc/bfc_core_inline.h"
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
      serves_from_new_region_(policy_->ServesFromNewRegion()),
      releases_before_growth_(policy_->ReleasesBeforeGrowth()),
      requests_(policy_->NumPools(), 0),
      decommit_granule_(ChooseDecommitGranule()),
      decommit_to_hold_peak_(policy_->DecommitsToHoldPeak().value_or(
          !upstream->DecommitWaitsForDevice())),
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
  CountRequest(pool);
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
  if (void* ptr = ReleaseForRequestAndGrow(bytes, rounded, alignment,
                                           freed_before, pool)) {
    return ptr;
  }
  // Returning empty regions may let the upstream hand back one larger region.
  if (DeallocateFreeRegions(rounded)) {
    ++stats_.num_alloc_retries;
    if (void* ptr = GrowAndFind(bytes, rounded, alignment, freed_before, pool))
      return ptr;
  }
  if (DecommitHolesWhenShort(pool)) {
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
    // Out of address space (a reservation full of holes) or refused: a
    // recommit that costs more than the extension would have still serves.
    if (decommitted_bytes_ == 0 || alignment != bfc::kMinAllocationSize)
      return nullptr;
    return RecommitAndFind(bytes, rounded, freed_before, pool,
                           /*even_if_costlier=*/true);
  }
  if (serves_from_new_region_) {
    if (void* ptr = ServeGrown(bytes, rounded, alignment, pool)) return ptr;
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

void* BfcCore::ServeGrown(uint64_t bytes, uint64_t rounded, uint64_t alignment,
                          int pool) {
  const BfcChunk& chunk = map_.chunk(grown_chunk_);
  if (!chunk.Mergeable() ||
      chunk.size < rounded + bfc::AlignmentPadding(chunk.address, alignment)) {
    return nullptr;
  }
  return ServeFit(chunk.Key(grown_chunk_), bytes, rounded, alignment, pool);
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

void BfcCore::QueueStamped(ChunkHandle handle) {
  timestamped_chunks_.push_back({handle, map_.chunk(handle).generation});
}

const BfcChunk* BfcCore::FindLiveChunk(const void* ptr) const {
  const ChunkHandle handle = map_.FindLive(reinterpret_cast<uint64_t>(ptr));
  return handle == kInvalidChunk ? nullptr : &map_.chunk(handle);
}

}  // namespace tensormem::internal
