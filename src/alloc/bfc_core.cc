#include "alloc/bfc_core.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "tensormem/alloc/bfc_policy.h"

namespace tensormem::internal {

namespace {

uint64_t MaxInternalFragmentation(const BfcCore::Config& config) {
  if (config.fragmentation_fraction <= 0)
    return bfc::kDefaultMaxInternalFragmentation;
  return static_cast<uint64_t>(config.fragmentation_fraction *
                               static_cast<double>(config.memory_limit));
}

}  // namespace

BfcCore::BfcCore(SubAllocator* upstream, const Config& config,
                 std::unique_ptr<BfcFreeIndex> index)
    : upstream_(upstream),
      config_(config),
      max_internal_fragmentation_(MaxInternalFragmentation(config)),
      coalesce_regions_(upstream->SupportsCoalescing()),
      // Without growth the first region is the whole limit, obtained lazily.
      region_bytes_(
          bfc::RoundedBytes(config.allow_growth
                                ? std::min(config.memory_limit,
                                           bfc::kInitialGrowthRegionBytes)
                                : config.memory_limit)
              .value_or(config.memory_limit)),
      index_(std::move(index)) {
  stats_.bytes_limit = config.memory_limit;
}

void* BfcCore::Allocate(uint64_t bytes, uint64_t alignment,
                        uint64_t freed_before) {
  const std::optional<uint64_t> rounded_or = bfc::RoundedBytes(bytes);
  if (!rounded_or || *rounded_or > config_.memory_limit) {
    RecordFailure(bytes, rounded_or.value_or(0), alignment, freed_before);
    return nullptr;
  }
  const uint64_t rounded = *rounded_or;
  if (!timestamped_chunks_.empty()) MergeTimestampedChunks(0);
  if (void* ptr = FindChunk(bytes, rounded, alignment, freed_before))
    return ptr;
  if (Extend(alignment, rounded)) {
    if (void* ptr = FindChunk(bytes, rounded, alignment, freed_before))
      return ptr;
  }
  // Rather than fail, force-merge chunks whose frees are not yet known to be
  // safe, for callers that do not care when their memory was freed.
  if (freed_before == 0 && !timestamped_chunks_.empty() &&
      MergeTimestampedChunks(rounded)) {
    if (void* ptr = FindChunk(bytes, rounded, alignment, freed_before))
      return ptr;
  }
  // Returning empty regions may let the upstream hand back one larger region.
  if (DeallocateFreeRegions(rounded) && Extend(alignment, rounded)) {
    if (void* ptr = FindChunk(bytes, rounded, alignment, freed_before))
      return ptr;
  }
  RecordFailure(bytes, rounded, alignment, freed_before);
  return nullptr;
}

void* BfcCore::FindChunk(uint64_t bytes, uint64_t rounded, uint64_t alignment,
                         uint64_t freed_before) {
  const bool filter_by_time = freed_before > 0;
  const bool filter_by_alignment = alignment > bfc::kMinAllocationSize;
  std::optional<FreeChunkKey> fit;
  if (!filter_by_time && !filter_by_alignment) {
    fit = index_->FindBestFit(rounded);
  } else {
    fit = index_->FindBestFitIf(rounded, [&](const FreeChunkKey& key) {
      if (filter_by_time &&
          freed_before < map_.chunk(key.handle).freed_at_count)
        return false;
      return key.size - rounded >=
             bfc::AlignmentPadding(key.address, alignment);
    });
  }
  if (!fit) return nullptr;
  ChunkHandle handle = fit->handle;
  RemoveFree(handle);
  if (const uint64_t padding = bfc::AlignmentPadding(fit->address, alignment);
      padding > 0) {
    // The unaligned prefix stays behind as a free chunk of its own.
    const ChunkHandle aligned = SplitChunk(handle, padding);
    InsertFree(handle);
    handle = aligned;
  }
  if (bfc::ShouldSplit(map_.chunk(handle).size, rounded,
                       max_internal_fragmentation_)) {
    const ChunkHandle tail = SplitChunk(handle, rounded);
    InsertFree(tail);
    QueueTimestamped(tail);
  }
  return MarkInUse(handle, bytes);
}

void* BfcCore::MarkInUse(ChunkHandle handle, uint64_t bytes) {
  BfcChunk& chunk = map_.chunk(handle);
  chunk.requested_size = bytes;
  chunk.allocation_id = next_allocation_id_++;
  map_.AddLive(chunk.address, handle);
  ++stats_.num_allocs;
  stats_.bytes_in_use += chunk.size;
  stats_.peak_bytes_in_use =
      std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  stats_.largest_alloc_size = std::max(stats_.largest_alloc_size, chunk.size);
  return reinterpret_cast<void*>(chunk.address);
}

absl::Status BfcCore::Free(void* ptr) {
  const uint64_t address = reinterpret_cast<uint64_t>(ptr);
  const ChunkHandle handle = map_.FindLive(address);
  if (handle == kInvalidChunk) return DiagnoseBadFree(address);
  map_.RemoveLive(address);
  BfcChunk& chunk = map_.chunk(handle);
  chunk.allocation_id = -1;
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
    InsertFree(TryToCoalesce(handle, /*ignore_freed_at=*/false));
  }
  return absl::OkStatus();
}

absl::Status BfcCore::DiagnoseBadFree(uint64_t address) const {
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

ChunkHandle BfcCore::SplitChunk(ChunkHandle handle, uint64_t head_bytes) {
  const ChunkHandle tail =
      map_.NewChunk();  // may move chunks: take references after
  BfcChunk& head = map_.chunk(handle);
  BfcChunk& rest = map_.chunk(tail);
  rest.address = head.address + head_bytes;
  rest.size = head.size - head_bytes;
  rest.freed_at_count = head.freed_at_count;
  rest.prev = handle;
  rest.next = head.next;
  if (head.next != kInvalidChunk) map_.chunk(head.next).prev = tail;
  head.next = tail;
  head.size = head_bytes;
  return tail;
}

ChunkHandle BfcCore::TryToCoalesce(ChunkHandle handle, bool ignore_freed_at) {
  ChunkHandle result = handle;
  const ChunkHandle next = map_.chunk(handle).next;
  if (next != kInvalidChunk && !map_.chunk(next).in_use() &&
      (ignore_freed_at || map_.chunk(next).freed_at_count == 0)) {
    RemoveFree(next);
    Merge(handle, next);
  }
  const ChunkHandle prev = map_.chunk(handle).prev;
  if (prev != kInvalidChunk && !map_.chunk(prev).in_use() &&
      (ignore_freed_at || map_.chunk(prev).freed_at_count == 0)) {
    RemoveFree(prev);
    Merge(prev, handle);
    result = prev;
  }
  return result;
}

void BfcCore::Merge(ChunkHandle first, ChunkHandle second) {
  BfcChunk& low = map_.chunk(first);
  const BfcChunk& high = map_.chunk(second);
  low.size += high.size;
  low.next = high.next;
  low.freed_at_count = std::max(low.freed_at_count, high.freed_at_count);
  if (high.next != kInvalidChunk) map_.chunk(high.next).prev = first;
  map_.ReleaseChunk(second);
}

void BfcCore::InsertFree(ChunkHandle handle) {
  index_->Insert(map_.chunk(handle).Key(handle));
}

void BfcCore::RemoveFree(ChunkHandle handle) {
  index_->Erase(map_.chunk(handle).Key(handle));
}

void BfcCore::QueueTimestamped(ChunkHandle handle) {
  const BfcChunk& chunk = map_.chunk(handle);
  if (chunk.freed_at_count > 0)
    timestamped_chunks_.push_back({handle, chunk.generation});
}

const BfcChunk* BfcCore::FindLiveChunk(const void* ptr) const {
  const ChunkHandle handle = map_.FindLive(reinterpret_cast<uint64_t>(ptr));
  return handle == kInvalidChunk ? nullptr : &map_.chunk(handle);
}

}  // namespace tensormem::internal
