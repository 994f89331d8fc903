// BfcCore: the single-threaded engine of the BFC allocator.
//
// It ties the parts together: the policy (allocation_policy.h) decides
// rounding, pools, splitting and region sizes, a free index per pool picks the
// best fit, the address map keeps chunks
// and regions, and the upstream supplies regions. BfcAllocator wraps it with a
// mutex, retry-on-failure and the misuse policy; nothing here locks.
//
// The implementation is split by concern: bfc_core.cc (allocate, free, split,
// merge; their hot steps inline in bfc_core_inline.h), bfc_extend.cc (growing
// and garbage-collecting regions), bfc_decommit.cc (giving back memory inside
// regions and taking it again), bfc_timestamps.cc (timestamped frees),
// bfc_introspection.cc (stats, dumps, invariants, failure reports).
#ifndef TENSORMEM_SRC_ALLOC_BFC_CORE_H_
#define TENSORMEM_SRC_ALLOC_BFC_CORE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "alloc/address_map.h"
#include "alloc/fast_free_index.h"
#include "tensormem/alloc/allocation_policy.h"
#include "tensormem/alloc/allocator_stats.h"
#include "tensormem/alloc/bfc_free_index.h"
#include "tensormem/alloc/bfc_policy.h"
#include "tensormem/alloc/bfc_shared_counter.h"
#include "tensormem/alloc/memory_dump.h"
#include "tensormem/alloc/sub_allocator.h"

namespace tensormem::internal {

// Aligned to a cache line: the engines of a ShardedAllocator's shards, used
// by different threads, never share one.
class alignas(64) BfcCore {
 public:
  struct Config {
    uint64_t memory_limit = 0;
    bool garbage_collection = false;
  };
  // `upstream` must outlive the core; `indexes` holds one free index per pool
  // of the policy (a policy that separates streams gets fast indexes for the
  // pools of every further stream as they appear).
  BfcCore(SubAllocator* upstream, const Config& config,
          std::unique_ptr<AllocationPolicy> policy,
          std::vector<std::unique_ptr<BfcFreeIndex>> indexes);
  ~BfcCore();  // returns every region to the upstream
  BfcCore(const BfcCore&) = delete;
  BfcCore& operator=(const BfcCore&) = delete;

  // A block of `bytes` (> 0) aligned to `alignment` (a power of two >= 256),
  // reusing only chunks freed before `freed_before` (0: any safe chunk), for
  // use on `stream`. On failure returns nullptr and records why
  // (last_failure_report()).
  void* Allocate(uint64_t bytes, uint64_t alignment, uint64_t freed_before,
                 int32_t stream);
  // The common case of Allocate, for callers without a free-time filter: the
  // best fit from the free index, or nullptr with nothing changed (no
  // failure recorded, no growth), after which the caller calls Allocate.
  // Inline: with the allocator's lock and checks, one function per request.
  [[gnu::always_inline]] void* AllocateFromIndex(uint64_t bytes,
                                                 uint64_t alignment,
                                                 int32_t stream) {
    if (!timestamped_chunks_.empty()) return nullptr;
    if (single_fast_index_ != nullptr && alignment == bfc::kMinAllocationSize) {
      // An inline policy, one pool, the fast index, no filter, the best fit
      // serves (FindChunk without its general cases). The rounding is the
      // inline one, not RoundedSize: an optional merged from two paths goes
      // through memory, and its read waits for the narrower stores.
      const std::optional<uint64_t> rounded = bfc::RoundedBytes(bytes);
      if (!rounded || *rounded > config_.memory_limit) return nullptr;
      const FreeSlot fit = single_fast_index_->FindBestFitSlot(*rounded);
      if (!fit.found()) return nullptr;
      FreeChunkKey chosen = fit.key();
      PreferHoleToTail(chosen, /*pool=*/0, *rounded, alignment,
                       /*freed_before=*/0);
      if (chosen.handle == fit.handle) return ServeSlot(fit, bytes, *rounded);
      return ServeFit(chosen, bytes, *rounded, alignment, /*pool=*/0);
    }
    const std::optional<uint64_t> rounded = RoundedSize(bytes);
    if (!rounded || *rounded > config_.memory_limit) return nullptr;
    const int pool = inline_ ? 0 : PoolOf(stream, *rounded);
    void* ptr = FindChunk(bytes, *rounded, alignment, /*freed_before=*/0, pool);
    // A miss is counted by Allocate, which the caller calls next.
    if (ptr != nullptr) CountRequest(pool);
    return ptr;
  }
  // Frees the in-use block at `ptr`; false (and no change) when there is none:
  // DiagnoseBadFree then says why.
  bool FreeIfLive(void* ptr);
  // Why `ptr` is not a block that may be freed (unknown, interior, free).
  absl::Status DiagnoseBadFree(const void* ptr) const;
  // Records a request refused before it reached the core (e.g. bad alignment).
  void RecordRejectedRequest(uint64_t bytes, uint64_t alignment,
                             std::string_view reason);

  // bfc_rebuild.cc: a recorded state rebuilt. AddRegion grows the pool that
  // serves `request_bytes` on `stream` by a region of exactly `bytes`,
  // serving nothing (false when the limit or the upstream refuses).
  // AllocateAt serves `bytes` at `address`, inside a free chunk of the pool
  // that serves it; the chunk is cut before the block, and after it as the
  // split rule says (nullptr when no such free chunk holds the block). And
  // KeepOnly (BfcAllocator::KeepOnly).
  bool AddRegion(uint64_t bytes, uint64_t request_bytes, int32_t stream);
  void* AllocateAt(uint64_t address, uint64_t bytes, int32_t stream);
  bool KeepOnly(uint64_t address, std::span<const bfc::KeptPart> parts);

  // Returns regions without in-use chunks to the upstream, and trailing
  // pieces of coalesced regions that hold nothing in use; false if none.
  bool ReleaseFreeRegions();
  uint64_t decommit_granule() const { return decommit_granule_; }
  // bfc_decommit.cc: DecommitFreeGranules for every pool, all it finds,
  // regions' free tails included; false when nothing went back (or the
  // policy or upstream cannot).
  bool DecommitAllFreeGranules();

  void SetTimingCounter(SharedCounter* counter) { timing_counter_ = counter; }
  // Raises the safe frontier (never lowers it); true when it rose.
  bool SetSafeFrontier(uint64_t frontier);

  // The in-use chunk starting at `ptr`, or nullptr.
  const BfcChunk* FindLiveChunk(const void* ptr) const;
  AllocatorStats Stats() const;
  void ClearStats();
  double Fragmentation() const;
  MemoryDump Dump(std::string_view name) const;
  std::string RenderOccupancy() const;
  absl::Status CheckInvariants() const;
  const std::string& last_failure_report() const {
    return last_failure_report_;
  }
  const BfcFreeIndex& index() const { return *indexes_.front(); }
  const AllocationPolicy& policy() const { return *policy_; }
  // The policy's rounding, inline when the policy allows (no lock needed).
  std::optional<uint64_t> RoundedSize(uint64_t bytes) const {
    return inline_ ? bfc::RoundedBytes(bytes) : policy_->RoundedSize(bytes);
  }

 private:
  [[gnu::always_inline]] bool ShouldSplit(uint64_t chunk_size, uint64_t rounded,
                                          int pool) const {
    if (!inline_)
      return policy_->ShouldSplit(chunk_size, rounded, PolicyPool(pool));
    return (inline_->split_at_double && chunk_size >= 2 * rounded) ||
           chunk_size - rounded >= inline_->split_tail_bytes;
  }

  // bfc_core.cc
  // The engine's pool for a request: the policy's pool, offset by the
  // stream's set of pools when the policy keeps streams apart.
  int PoolOf(int32_t stream, uint64_t rounded);
  int PolicyPool(int pool) const {
    return separates_streams_ ? pool % pools_per_stream_ : pool;
  }
  void* FindChunk(uint64_t bytes, uint64_t rounded, uint64_t alignment,
                  uint64_t freed_before, int pool);
  // The policy's tail rule: when `fit`, the best fit for `rounded` bytes, is
  // a region's free tail kept from requests this small, the best hole that
  // fits (FindFitOutsideTails) replaces it, if there is one.
  void PreferHoleToTail(FreeChunkKey& fit, int pool, uint64_t rounded,
                        uint64_t alignment, uint64_t freed_before) const {
    if (rounded >= tail_kept_below_ ||
        map_.chunk(fit.handle).next != kInvalidChunk) {
      return;
    }
    if (std::optional<FreeChunkKey> hole =
            FindFitOutsideTails(pool, rounded, alignment, freed_before)) {
      fit = *hole;
    }
  }
  // The best fit among free chunks that do not end a region, if any.
  std::optional<FreeChunkKey> FindFitOutsideTails(int pool, uint64_t rounded,
                                                  uint64_t alignment,
                                                  uint64_t freed_before) const;
  // Serves a request from `fit`, a free chunk of `pool` that fits it: splits
  // off an alignment prefix and a tail as the policy says, marks it in use.
  void* ServeFit(const FreeChunkKey& fit, uint64_t bytes, uint64_t rounded,
                 uint64_t alignment, int pool);
  // ServeFit for the single fast index and the default alignment, with the
  // fit's place in the index known (no search to update it).
  void* ServeSlot(const FreeSlot& fit, uint64_t bytes, uint64_t rounded);
  // ServeFit for a fit that needs alignment padding: takes it out of the
  // index, splits off the prefix (free) and a tail as the policy says;
  // returns the chunk to mark in use.
  ChunkHandle TakeAligned(const FreeChunkKey& fit, uint64_t rounded,
                          uint64_t alignment, int pool);
  void* MarkInUse(ChunkHandle handle, uint64_t bytes);
  // Cuts `handle` at `head_bytes`; returns the new tail chunk (not indexed).
  ChunkHandle SplitChunk(ChunkHandle handle, uint64_t head_bytes);
  // Merges free neighbours into `handle` (not indexed); returns the result.
  ChunkHandle TryToCoalesce(ChunkHandle handle, bool ignore_freed_at);
  void Merge(ChunkHandle first, ChunkHandle second);
  // Merges a freed chunk (safe, not indexed) with its free, safe neighbours
  // and indexes the result; IndexFreed stamps it first under timed frees.
  void MergeAndIndex(ChunkHandle handle);
  void IndexFreed(ChunkHandle handle);
  // Calls `use` with the free index of `pool`: by its concrete type when it
  // is the fast one (inline, no virtual calls), else through the interface.
  template <typename Use>
  [[gnu::always_inline]] decltype(auto) WithIndex(uint32_t pool, Use use) {
    if (FastFreeIndex* fast = fast_indexes_[pool]) return use(*fast);
    return use(*indexes_[pool]);
  }
  void AddIndex(std::unique_ptr<BfcFreeIndex> index);
  // The best fit of `pool` that `accept` takes; inline for the fast index.
  template <typename Accept>
  std::optional<FreeChunkKey> BestFitWhere(int pool, uint64_t rounded,
                                           const Accept& accept) const {
    if (const FastFreeIndex* fast = fast_indexes_[pool])
      return fast->FindBestFitWhere(rounded, accept);
    return indexes_[pool]->FindBestFitIf(rounded, accept);
  }
  [[gnu::always_inline]] void InsertFree(ChunkHandle handle) {
    const BfcChunk& chunk = map_.chunk(handle);
    const FreeChunkKey key = chunk.Key(handle);
    WithIndex(
        chunk.pool, [&](auto& any)
                        __attribute__((always_inline)) { any.Insert(key); });
  }
  void RemoveFree(ChunkHandle handle) {
    const BfcChunk& chunk = map_.chunk(handle);
    const FreeChunkKey key = chunk.Key(handle);
    WithIndex(
        chunk.pool, [&](auto& any)
                        __attribute__((always_inline)) { any.Erase(key); });
  }
  [[gnu::always_inline]] void QueueTimestamped(ChunkHandle handle) {
    if (map_.chunk(handle).freed_at_count > 0) QueueStamped(handle);
  }
  void QueueStamped(ChunkHandle handle);

  // bfc_extend.cc
  // Grows the pool for a request; `use_free_tail` lets a coalescing upstream
  // extend the last region's free tail instead of holding the whole request
  // (`relied_on_tail` tells whether the new region alone is too small).
  bool Extend(uint64_t rounded, uint64_t alignment, int pool,
              bool use_free_tail, bool* relied_on_tail);
  void* GrowAndFind(uint64_t bytes, uint64_t rounded, uint64_t alignment,
                    uint64_t freed_before, int pool);
  // Adds an upstream piece; true when it joined an existing region. Sets
  // grown_chunk_.
  bool AddMemory(void* ptr, uint64_t bytes_received, int pool);
  // Counts a request for `pool` (the ages of free regions).
  void CountRequest(int pool) {
    if (releases_before_growth_) ++requests_[PolicyPool(pool)];
  }
  // After a free at `address`: stamps its region when it is wholly free.
  void NoteFreed(uint64_t address);
  // Returns the free regions the policy picks before the pool grows.
  void ReleaseBeforeGrowth();
  // The policy's release for one request (ReleaseForRequest), then growth
  // again when the policy says so; nullptr when nothing was served.
  void* ReleaseForRequestAndGrow(uint64_t bytes, uint64_t rounded,
                                 uint64_t alignment, uint64_t freed_before,
                                 int pool);
  // A region holding nothing in use, as policies see it.
  FreeRegion DescribeFree(const BfcRegion& region) const;
  // `starts` (regions holding nothing in use) in the policy's release order.
  std::vector<uint64_t> InReleaseOrder(
      const std::vector<uint64_t>& starts) const;
  // Serves a request from grown_chunk_ (ServesFromNewRegion); nullptr when
  // it does not fit.
  void* ServeGrown(uint64_t bytes, uint64_t rounded, uint64_t alignment,
                   int pool);
  // A new free chunk (not linked, not indexed).
  ChunkHandle NewFreeChunk(uint64_t address, uint64_t size, int pool);
  uint64_t FreeTailBytes(int pool) const;
  ChunkHandle LastChunk(const BfcRegion& region) const;
  bool DeallocateFreeRegions(uint64_t rounded);
  std::vector<uint64_t> FreeRegionStarts() const;
  void DeallocateRegions(const std::vector<uint64_t>& region_starts);
  // Coalesced regions: returns trailing upstream pieces that hold nothing in
  // use (the pool shrinks from its end); the bytes returned.
  uint64_t TrimTrailingPieces();
  uint64_t TrailingFreePieceBytes() const;
  // What the limit still allows the pool to take (0 when it is reached).
  uint64_t Headroom() const;

  // bfc_decommit.cc
  // The granule in which free memory inside regions is decommitted (0: never).
  uint64_t ChooseDecommitGranule() const;
  // Before the pool grows: decommits free granules when growing would raise
  // the pool's high-water mark, then recommits if that is cheaper than
  // growing. nullptr when the request is left to growth.
  void* ReuseDecommitted(uint64_t bytes, uint64_t rounded, uint64_t alignment,
                         uint64_t freed_before, int pool);
  // When a request would fail and the policy keeps holes while memory lasts
  // (decommit:on_pressure): decommits every free granule of the pool; true
  // if any went back, so that growth may be tried again.
  bool DecommitHolesWhenShort(int pool);
  // The bytes growth adds for `rounded` bytes: what the free tail lacks.
  uint64_t ExtensionBytes(uint64_t rounded, int pool) const;
  // Decommits whole granules inside the pool's free chunks, the largest
  // first, until at least `wanted` bytes went back or none are left. A
  // region's last chunk, which growth extends, only `with_tails`.
  void DecommitFreeGranules(int pool, uint64_t wanted, bool with_tails = false);
  // Decommits the whole granules inside free chunk `handle`; false when the
  // upstream refused.
  bool DecommitInside(ChunkHandle handle);
  // Recommits part of a decommitted chunk next to free memory when that makes
  // a fit for `rounded` bytes more cheaply than extending the free tail (or,
  // with `even_if_costlier`, whatever the extension would cost); then
  // allocates. nullptr when extending is cheaper or recommitting fails.
  void* RecommitAndFind(uint64_t bytes, uint64_t rounded, uint64_t freed_before,
                        int pool, bool even_if_costlier);
  // Recommits [begin, end), whole granules of decommitted chunk `handle`, as
  // a free chunk not yet indexed; kInvalidChunk when the limit or upstream
  // refuses.
  ChunkHandle Recommit(ChunkHandle handle, uint64_t begin, uint64_t end);
  // Whether holes hold back as much address space as the pool ever committed:
  // growth then recommits rather than extends, so that the address range (and
  // the live table over it) stays bounded when holes keep moving.
  bool HolesAtTheirBound() const {
    return decommitted_bytes_ > stats_.peak_pool_bytes;
  }
  struct RecommitChoice {
    ChunkHandle chunk = kInvalidChunk;
    uint64_t offset = 0;  // into the decommitted chunk
    uint64_t bytes = 0;
  };
  std::optional<RecommitChoice> CheapestRecommit(uint64_t rounded,
                                                 int pool) const;
  // Bytes of `handle` if it is a free chunk a recommitted range merges with.
  uint64_t FreeBytesToMerge(ChunkHandle handle) const {
    if (handle == kInvalidChunk) return 0;
    const BfcChunk& chunk = map_.chunk(handle);
    return chunk.Mergeable() ? chunk.size : 0;
  }
  // Drops `handle` from the decommitted chunks.
  void ForgetDecommitted(ChunkHandle handle);
  // bfc_timestamps.cc
  bool MergeTimestampedChunks(uint64_t required_bytes);

  // bfc_introspection.cc
  void RecordFailure(uint64_t bytes, uint64_t rounded, uint64_t alignment,
                     uint64_t freed_before);
  uint64_t LargestFreeBlock() const;
  struct ChunkTally {
    uint64_t in_use_bytes = 0, pool_bytes = 0, decommitted_bytes = 0;
    uint64_t free_chunks = 0, live_chunks = 0, requested_bytes = 0;
  };
  absl::Status CheckRegion(const BfcRegion& region, ChunkTally& tally) const;
  absl::Status CheckChunk(ChunkHandle h, ChunkHandle prev, uint32_t region_pool,
                          ChunkTally& tally) const;

  struct QueuedChunk {
    ChunkHandle handle;
    uint32_t generation;
  };

  SubAllocator* const upstream_;
  const Config config_;
  const std::unique_ptr<AllocationPolicy> policy_;
  const bool coalesce_regions_;
  const uint64_t tail_kept_below_;
  const bool serves_from_new_region_;
  // RegionsToRelease in use: requests per policy pool, counted to age
  // free regions.
  const bool releases_before_growth_;
  std::vector<uint64_t> requests_;
  // The free chunk holding the memory the last growth added.
  ChunkHandle grown_chunk_ = kInvalidChunk;
  const uint64_t decommit_granule_;
  // Holes go back whenever growth would raise the high-water mark, or only
  // when a request would fail (AllocationPolicy::DecommitsToHoldPeak).
  const bool decommit_to_hold_peak_;
  uint64_t decommitted_bytes_ = 0;  // in decommitted chunks
  // Few (the holes of one pool), scanned whole by each recommit: a vector.
  std::vector<ChunkHandle> decommitted_chunks_;
  const bool separates_streams_;
  const int pools_per_stream_;
  // Engine pool p belongs to stream streams_[p / pools_per_stream_] (only
  // when the policy separates streams).
  std::vector<int32_t> streams_;
  // The policy's per-request decisions, made here without virtual calls.
  const std::optional<AllocationPolicy::InlineDecisions> inline_;
  std::vector<std::unique_ptr<BfcFreeIndex>> indexes_;  // one per pool
  // indexes_[p] when it is a FastFreeIndex, else nullptr.
  std::vector<FastFreeIndex*> fast_indexes_;
  // The one index of an inline policy, when it is the fast one.
  FastFreeIndex* single_fast_index_ = nullptr;
  AddressMap map_;
  AllocatorStats stats_;
  int64_t next_allocation_id_ = 1;
  SharedCounter* timing_counter_ = nullptr;
  std::atomic<uint64_t> safe_frontier_{0};
  std::deque<QueuedChunk> timestamped_chunks_;
  std::string last_failure_report_;
};

}  // namespace tensormem::internal

#endif  // TENSORMEM_SRC_ALLOC_BFC_CORE_H_
