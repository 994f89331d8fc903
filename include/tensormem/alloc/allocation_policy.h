// AllocationPolicy: the decisions that tell one BFC-style allocator from
// another, as hooks the BFC engine calls.
//
// The engine (regions from an upstream, chunks in address order, a best-fit
// free index per pool, split on allocation, merge on free) is shared. A policy
// decides how requests are rounded, which pool serves them, whether the best
// fit may be used, when a chunk is split, how large a new region is, and
// whether free memory goes back to the upstream before a request fails.
// Policies are created by name (policy_registry.h); each one is one file.
//
//   PolicyEnvironment env{.memory_limit = 1 * kGiB, .allow_growth = true};
//   absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy =
//       CreatePolicy("pytorch", env, "max_split_size_mb:512");
//   BfcAllocator bfc(std::move(upstream), 1 * kGiB, {}, *std::move(policy));
#ifndef TENSORMEM_ALLOC_ALLOCATION_POLICY_H_
#define TENSORMEM_ALLOC_ALLOCATION_POLICY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tensormem {

// What a policy is told about the allocator it serves, once, at creation.
struct PolicyEnvironment {
  uint64_t memory_limit = 0;
  // false: the pool is one region of the whole limit, taken at the first
  // allocation (policies that always grow by segments may ignore it).
  bool allow_growth = true;
  // Whether the upstream hands out regions that extend earlier ones
  // (SubAllocator::SupportsCoalescing).
  bool upstream_coalesces = false;
  // TensorFlow's fragmentation fraction (> 0: split whenever the tail would be
  // at least this fraction of the limit).
  double fragmentation_fraction = 0;
  // Growth unit of policies that grow by what a request needs (a GPU's VMM
  // allocation granularity).
  uint64_t granule = 2 << 20;
};

// A region with nothing in use, offered for release before the pool grows.
struct FreeRegion {
  uint64_t start = 0;
  uint64_t bytes = 0;
  int pool = 0;         // the policy's pool
  int stream_slot = 0;  // streams in order of first use (SeparatesStreams)
  // Requests for the region's pool (any stream) since it became free: how
  // long it sat unused.
  uint64_t age = 0;
};

// Why the engine asks for a new region, and what it knows at that moment.
struct GrowthRequest {
  uint64_t rounded = 0;    // chunk size the request needs
  uint64_t alignment = 0;  // of the request (>= 256)
  int pool = 0;
  // Limit minus pool bytes, rounded down to 256: the most the engine may ask.
  uint64_t headroom = 0;
  // Free bytes at the end of the pool's last region that a new contiguous
  // region would merge with (0 unless the upstream coalesces and the policy
  // merges regions).
  uint64_t free_tail = 0;
};

class AllocationPolicy {
 public:
  virtual ~AllocationPolicy() = default;

  // The registry name, with the options that differ from the defaults.
  virtual std::string Describe() const = 0;

  // The chunk size a request of `bytes` (> 0) is served with: a multiple of
  // 256. nullopt when it overflows.
  virtual std::optional<uint64_t> RoundedSize(uint64_t bytes) const = 0;

  // Pools partition regions: a request is served only by chunks of its pool.
  virtual int NumPools() const { return 1; }
  virtual int PoolFor(uint64_t /*rounded*/) const { return 0; }
  // Whether memory is never shared across streams: each stream the engine
  // sees gets its own set of NumPools() pools (and regions). The pool numbers
  // the hooks below receive are always the policy's own, 0..NumPools()-1.
  virtual bool SeparatesStreams() const { return false; }

  // Requests below this many bytes (0: none) take the free tail of a region
  // only when no other free chunk of the pool fits, however larger.
  virtual uint64_t TailKeptFromRequestsBelow() const { return 0; }

  // Whether the best fit (the smallest free chunk >= `rounded` in the pool)
  // may serve the request. false means no chunk of the pool may, so a new
  // region is made.
  virtual bool MayServe(uint64_t /*chunk_size*/, uint64_t /*rounded*/) const {
    return true;
  }

  // Whether a chunk of `chunk_size` chosen for `rounded` bytes is cut at
  // `rounded`, the tail becoming a free chunk.
  virtual bool ShouldSplit(uint64_t chunk_size, uint64_t rounded,
                           int pool) const = 0;

  // Bytes to ask the upstream for (>= request.rounded - request.free_tail,
  // <= request.headroom), or 0 when the policy will not grow.
  virtual uint64_t RegionBytes(const GrowthRequest& request) = 0;
  // After the upstream refused `refused` bytes: a smaller size to try, or 0 to
  // give up.
  virtual uint64_t SmallerRegionBytes(uint64_t /*refused*/,
                                      const GrowthRequest& /*request*/) const {
    return 0;
  }
  // The upstream granted the region asked for with `request`.
  virtual void RegionAdded(const GrowthRequest& /*request*/) {}
  // Whether the request that made the pool grow is served by the free chunk
  // holding the new memory (PyTorch hands a request the segment it made for
  // it, even one its fit rules would pass over), rather than by the best fit
  // after growth.
  virtual bool ServesFromNewRegion() const { return false; }

  // The per-request decisions (RoundedSize, NumPools/PoolFor, MayServe,
  // ShouldSplit) in a form the engine evaluates inline, for policies whose
  // hooks make exactly these decisions; nullopt: the engine calls the hooks.
  struct InlineDecisions {
    // Requests round up to a multiple of 256, there is one pool and the best
    // fit always serves. A chunk is split when its tail would be at least
    // `split_tail_bytes` or, with `split_at_double`, when it is at least twice
    // the request.
    uint64_t split_tail_bytes = 1;
    bool split_at_double = false;
  };
  virtual std::optional<InlineDecisions> Inline() const { return std::nullopt; }

  // Whether a region contiguous with an earlier one of the same pool (from a
  // coalescing upstream) joins it, so chunks may merge across the seam.
  virtual bool MergesRegions() const { return true; }
  // Whether, before a request fails, regions holding nothing in use are
  // returned to the upstream and the request retried (garbage collection),
  // always, even when that cannot make room (PyTorch's caching allocator;
  // the engine's own garbage collection retries only when it can).
  virtual bool ReleasesFreeRegionsBeforeFailing() const { return false; }
  // When the pool cannot grow for a request of `rounded` bytes, before every
  // free region goes back: the regions of `free_regions` (those of the
  // request's pool and stream) to return first, into `release`; true when
  // growth is then tried again (PyTorch frees oversize blocks enough for the
  // request this way, with max_split_size_mb set).
  virtual bool ReleaseForRequest(
      uint64_t /*rounded*/, const std::vector<FreeRegion>& /*free_regions*/,
      std::vector<uint64_t>& /*release*/) const {
    return false;
  }
  // The order in which regions holding nothing in use go back when they all
  // do (ReleaseFreeRegions, the release before failing); address order
  // unless the policy sorts them.
  virtual void OrderForRelease(std::vector<FreeRegion>& /*regions*/) const {}
  // Granule (a multiple of 256; 0: never) in which the memory of free chunks
  // inside regions is given back to an upstream that can decommit, when
  // growing would raise the pool's high-water mark; growth then re-backs such
  // a range when that costs less than extending the last region. The pool
  // then follows live bytes instead of keeping every hole it ever had.
  virtual uint64_t DecommitGranule() const { return 0; }
  // Whether free granules go back whenever growing would raise the
  // high-water mark (true), or only when memory is short (false: the
  // release before failing, ReleaseFreeRegions); unset: the first unless
  // the upstream's decommit waits for the device (on a GPU each decommit
  // drains the device and each recommit maps memory again, a cost per step).
  virtual std::optional<bool> DecommitsToHoldPeak() const {
    return std::nullopt;
  }
  // Whether threads past the first may get pools of their own
  // (BfcAllocator::EnableThreadPools): placements are then the policy's
  // within each thread's pool, not across them.
  virtual bool AllowsThreadPools() const { return false; }
  // Whether the allocator learns repeating loops and serves them from a plan
  // (planned_allocator.h), with this policy's placements for the rest, and
  // where it plans.
  enum class LoopPlanning { kNone, kBackground, kInline };
  virtual LoopPlanning PlansLoops() const { return LoopPlanning::kNone; }
  // Whether free regions may be returned before the pool grows
  // (RegionsToRelease); the engine then tracks how long each sat unused.
  virtual bool ReleasesBeforeGrowth() const { return false; }
  // Before the pool grows, holding `pool_bytes`: the starts of the regions of
  // `free_regions` to return to the upstream first, in the order to return
  // them.
  virtual std::vector<uint64_t> RegionsToRelease(
      uint64_t /*pool_bytes*/,
      const std::vector<FreeRegion>& /*free_regions*/) const {
    return {};
  }

  // The environment CreatePolicy made this policy for (unset for a policy
  // constructed directly), so that an allocator given the policy can refuse
  // options that contradict it.
  const std::optional<PolicyEnvironment>& created_for() const {
    return created_for_;
  }
  void set_created_for(const PolicyEnvironment& environment) {
    created_for_ = environment;
  }

 private:
  std::optional<PolicyEnvironment> created_for_;
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_ALLOCATION_POLICY_H_
