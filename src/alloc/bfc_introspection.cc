// What the BFC allocator can tell about itself: statistics, memory dumps, the
// occupancy picture, the invariant checker and the out-of-memory explanation.
#include <algorithm>
#include <string>

#include "absl/strings/str_format.h"
#include "alloc/bfc_core.h"
#include "tensormem/alloc/bfc_policy.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/core/units.h"

namespace tensormem::internal {

uint64_t BfcCore::LargestFreeBlock() const {
  uint64_t largest_size = 0;
  for (const auto& index : indexes_) {
    if (const std::optional<FreeChunkKey> largest = index->Largest())
      largest_size = std::max(largest_size, largest->size);
  }
  return largest_size;
}

AllocatorStats BfcCore::Stats() const {
  AllocatorStats stats = stats_;
  stats.largest_free_block_bytes = LargestFreeBlock();
  stats.num_regions = static_cast<int64_t>(map_.regions().size());
  for (const BfcRegion& region : map_.regions()) {
    if (region.first_chunk == region.last_chunk) continue;  // not split
    for (ChunkHandle h = region.first_chunk; h != kInvalidChunk;
         h = map_.chunk(h).next) {
      if (map_.chunk(h).is_free())
        stats.inactive_split_bytes += map_.chunk(h).size;
    }
  }
  return stats;
}

void BfcCore::ClearStats() {
  stats_.num_allocs = 0;
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
  stats_.largest_alloc_size = 0;
}

double BfcCore::Fragmentation() const {
  const uint64_t free_bytes = stats_.pool_bytes - stats_.bytes_in_use;
  if (free_bytes == 0) return 0;
  return static_cast<double>(free_bytes - LargestFreeBlock()) /
         static_cast<double>(free_bytes);
}

MemoryDump BfcCore::Dump(std::string_view name) const {
  MemoryDump dump;
  dump.allocator_name = std::string(name);
  dump.stats = Stats();
  dump.fragmentation = Fragmentation();
  if (const void* base = upstream_->BaseAddress()) {
    dump.base_address = reinterpret_cast<uint64_t>(base);
  } else if (!map_.regions().empty()) {
    dump.base_address = map_.regions().front().begin;
  }
  dump.bins.resize(bfc::kNumBins);
  for (int b = 0; b < bfc::kNumBins; ++b) {
    dump.bins[b].bin = b;
    dump.bins[b].bin_size = bfc::BinSizeFloor(b);
  }
  for (const BfcRegion& region : map_.regions()) {
    MemoryDump::Region& out = dump.regions.emplace_back();
    out.address = region.begin;
    out.offset = region.begin - dump.base_address;
    out.size = region.size();
    for (ChunkHandle h = region.first_chunk; h != kInvalidChunk;
         h = map_.chunk(h).next) {
      const BfcChunk& c = map_.chunk(h);
      const int bin = bfc::BinNumForSize(c.size);
      out.chunks.push_back({c.address, c.address - dump.base_address, c.size,
                            c.requested_size, c.in_use(), c.decommitted(), bin,
                            c.allocation_id, c.freed_at_count});
      if (c.decommitted()) continue;  // in no bin
      MemoryDump::BinSummary& summary = dump.bins[bin];
      summary.total_bytes_in_bin += c.size;
      ++summary.total_chunks_in_bin;
      if (c.in_use()) {
        summary.total_bytes_in_use += c.size;
        summary.total_requested_bytes_in_use += c.requested_size;
        ++summary.total_chunks_in_use;
      }
    }
  }
  return dump;
}

namespace {

// Paints `size` bytes at `offset` of a `total`-byte space onto `picture`.
void Paint(std::string& picture, uint64_t total, uint64_t offset, uint64_t size,
           char mark) {
  const auto scale = [&](uint64_t at) {
    return static_cast<size_t>(static_cast<unsigned __int128>(at) *
                               picture.size() / total);
  };
  const size_t last = std::min(scale(offset + size - 1), picture.size() - 1);
  for (size_t i = scale(offset); i <= last; ++i) picture[i] = mark;
}

}  // namespace

std::string BfcCore::RenderOccupancy() const {
  uint64_t total = 0;
  for (const BfcRegion& region : map_.regions()) total += region.size();
  if (total == 0) return "<allocator contains no memory>";
  // '_' free, '*' requested bytes, 'x' rounding and unsplit slack.
  std::string picture(100, '_');
  uint64_t region_offset = 0;
  for (const BfcRegion& region : map_.regions()) {
    for (ChunkHandle h = region.first_chunk; h != kInvalidChunk;
         h = map_.chunk(h).next) {
      const BfcChunk& c = map_.chunk(h);
      if (!c.in_use()) continue;
      const uint64_t offset = region_offset + (c.address - region.begin);
      if (c.size > c.requested_size) {
        Paint(picture, total, offset + c.requested_size,
              c.size - c.requested_size, 'x');
      }
      Paint(picture, total, offset, c.requested_size, '*');
    }
    region_offset += region.size();
  }
  return picture;
}

absl::Status BfcCore::CheckChunk(ChunkHandle h, ChunkHandle prev,
                                 uint32_t region_pool,
                                 ChunkTally& tally) const {
  const BfcChunk& c = map_.chunk(h);
  if (c.prev != prev) {
    return absl::InternalError(
        absl::StrFormat("chunk 0x%x has a wrong prev link", c.address));
  }
  const BfcChunk* before = prev == kInvalidChunk ? nullptr : &map_.chunk(prev);
  if (c.in_use()) {
    ++tally.live_chunks;
    tally.in_use_bytes += c.size;
    tally.requested_bytes += c.requested_size;
    if (map_.FindLive(c.address) != h || c.requested_size == 0 ||
        c.requested_size > c.size) {
      return absl::InternalError(absl::StrFormat(
          "in-use chunk 0x%x is not registered correctly", c.address));
    }
  } else if (c.decommitted()) {
    tally.decommitted_bytes += c.size;
    if (before != nullptr && before->decommitted()) {
      return absl::InternalError(
          absl::StrFormat("decommitted chunks at 0x%x and 0x%x were not merged",
                          before->address, c.address));
    }
  } else {
    ++tally.free_chunks;
    if (c.pool != region_pool || !indexes_[c.pool]->Contains(c.Key(h))) {
      return absl::InternalError(absl::StrFormat(
          "free chunk 0x%x of %d bytes is not in its bin", c.address, c.size));
    }
    if (before != nullptr && before->Mergeable() && c.Mergeable()) {
      return absl::InternalError(
          absl::StrFormat("free chunks at 0x%x and 0x%x were not merged",
                          before->address, c.address));
    }
  }
  return absl::OkStatus();
}

absl::Status BfcCore::CheckRegion(const BfcRegion& region,
                                  ChunkTally& tally) const {
  for (const UpstreamPiece& piece : region.pieces)
    tally.pool_bytes += piece.bytes;
  uint64_t expected_address = region.begin;
  ChunkHandle prev = kInvalidChunk;
  for (ChunkHandle h = region.first_chunk; h != kInvalidChunk;
       h = map_.chunk(h).next) {
    const BfcChunk& c = map_.chunk(h);
    if (c.address != expected_address || c.size == 0 ||
        c.size % bfc::kMinAllocationSize) {
      return absl::InternalError(absl::StrFormat(
          "chunk at 0x%x of %d bytes does not continue region 0x%x at 0x%x",
          c.address, c.size, region.begin, expected_address));
    }
    TM_RETURN_IF_ERROR(CheckChunk(h, prev, region.pool, tally));
    expected_address = c.end();
    prev = h;
  }
  if (prev != region.last_chunk) {
    return absl::InternalError(absl::StrFormat(
        "region 0x%x does not know its last chunk", region.begin));
  }
  if (expected_address != region.end) {
    return absl::InternalError(
        absl::StrFormat("chunks of region 0x%x end at 0x%x, not at 0x%x",
                        region.begin, expected_address, region.end));
  }
  return absl::OkStatus();
}

absl::Status BfcCore::CheckInvariants() const {
  ChunkTally tally;
  uint64_t previous_end = 0;
  for (const BfcRegion& region : map_.regions()) {
    if (region.begin < previous_end || region.end <= region.begin) {
      return absl::InternalError(
          absl::StrFormat("region 0x%x overlaps or is empty", region.begin));
    }
    previous_end = region.end;
    TM_RETURN_IF_ERROR(CheckRegion(region, tally));
  }
  size_t indexed_chunks = 0;
  for (const auto& index : indexes_) indexed_chunks += index->Size();
  if (tally.free_chunks != indexed_chunks) {
    return absl::InternalError(
        absl::StrFormat("%d free chunks but %d in the indexes",
                        tally.free_chunks, indexed_chunks));
  }
  if (tally.requested_bytes != stats_.bytes_requested) {
    return absl::InternalError(
        absl::StrFormat("requested bytes %d, but the chunks ask for %d",
                        stats_.bytes_requested, tally.requested_bytes));
  }
  // Decommitted memory went back to the upstream: the pool does not hold it.
  const uint64_t pool_bytes = tally.pool_bytes - tally.decommitted_bytes;
  if (tally.live_chunks != map_.num_live() ||
      tally.in_use_bytes != stats_.bytes_in_use ||
      pool_bytes != stats_.pool_bytes) {
    return absl::InternalError(absl::StrFormat(
        "stats disagree with chunks: in use %d vs %d, pool %d "
        "vs %d, live %d vs %d",
        stats_.bytes_in_use, tally.in_use_bytes, stats_.pool_bytes, pool_bytes,
        map_.num_live(), tally.live_chunks));
  }
  if (stats_.peak_bytes_in_use < stats_.bytes_in_use ||
      stats_.peak_pool_bytes < stats_.pool_bytes) {
    return absl::InternalError("a peak is below its current value");
  }
  return absl::OkStatus();
}

void BfcCore::RecordFailure(uint64_t bytes, uint64_t rounded,
                            uint64_t alignment, uint64_t freed_before) {
  ++stats_.num_ooms;
  const uint64_t limit = config_.memory_limit;
  const uint64_t free_bytes = stats_.pool_bytes - stats_.bytes_in_use;
  const uint64_t headroom =
      stats_.pool_bytes >= limit ? 0 : limit - stats_.pool_bytes;
  const uint64_t largest_free = LargestFreeBlock();
  std::string verdict;
  if (rounded == 0 || rounded > limit) {
    verdict = "the request alone exceeds the memory limit";
  } else if (largest_free >= rounded) {
    // Only the filters can have refused a block this large.
    std::string why;
    if (freed_before > 0) {
      why = absl::StrFormat(
          "this request may reuse only blocks freed before "
          "count %d",
          freed_before);
    }
    if (alignment > bfc::kMinAllocationSize) {
      absl::StrAppendFormat(&why, "%salignment to %d needs padding",
                            why.empty() ? "" : "; ", alignment);
    }
    verdict =
        absl::StrFormat("a free block of %s is large enough but unusable: %s",
                        HumanBytes(largest_free), why);
  } else if (free_bytes >= rounded) {
    verdict = absl::StrFormat(
        "fragmentation: %s are free but the largest free block is %s; no chunk "
        "fits",
        HumanBytes(free_bytes), HumanBytes(largest_free));
  } else if (free_bytes + headroom >= rounded) {
    verdict = headroom >= rounded
                  ? "the upstream refused to provide more memory"
                  : "fragmentation: free memory plus the unreserved headroom "
                    "would suffice, "
                    "but not contiguously";
  } else {
    verdict = absl::StrFormat("exhaustion: only %s free and %s unreserved",
                              HumanBytes(free_bytes), HumanBytes(headroom));
  }
  last_failure_report_ = absl::StrFormat(
      "out of memory: request %d bytes (rounded to %d, alignment %d); limit "
      "%s, in use %s, "
      "pool %s, free %s, largest free block %s, unreserved %s; %s",
      bytes, rounded, alignment, HumanBytes(limit),
      HumanBytes(stats_.bytes_in_use), HumanBytes(stats_.pool_bytes),
      HumanBytes(free_bytes), HumanBytes(largest_free), HumanBytes(headroom),
      verdict);
}

void BfcCore::RecordRejectedRequest(uint64_t bytes, uint64_t alignment,
                                    std::string_view reason) {
  last_failure_report_ =
      absl::StrFormat("rejected request of %d bytes with alignment %d: %s",
                      bytes, alignment, reason);
}

}  // namespace tensormem::internal
