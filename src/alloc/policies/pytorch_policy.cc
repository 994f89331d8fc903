// `pytorch`: a model of PyTorch's CUDA caching allocator (native backend).
//
// Requests are rounded to 512 bytes (or to a power-of-two division with
// roundup_power2_divisions). Requests up to 1 MiB are served by the small pool,
// carved from 2 MiB segments; larger ones by the large pool, whose segments are
// 20 MiB for requests under 10 MiB and the request rounded up to 2 MiB above.
// Segments never merge (each is one device allocation) unless
// expandable_segments makes one growing segment per pool, mapped in 2 MiB
// (small) or 20 MiB (large) pages. Before a request fails, cached segments
// with nothing in use are released and the request retried.
#include <algorithm>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "alloc/policies/policies.h"
#include "alloc/policies/pytorch_config.h"
#include "tensormem/core/checked_math.h"

namespace tensormem::internal {
namespace {

constexpr uint64_t kMinBlockSize = 512;
constexpr uint64_t kSmallSize = 1 << 20;       // largest small-pool request
constexpr uint64_t kSmallBuffer = 2 << 20;     // small-pool segment
constexpr uint64_t kMinLargeAlloc = 10 << 20;  // from here: exact segments
constexpr uint64_t kLargeBuffer = 20 << 20;    // segment of a mid-size request
constexpr uint64_t kRoundLarge = 2 << 20;
constexpr int kSmallPool = 0;
constexpr int kLargePool = 1;

// `bytes` rounded up to the next of `divisions` equal steps between two
// powers of two (9,000 with 4 divisions: steps of 2,048 above 8,192 -> 10,240).
uint64_t RoundToDivision(uint64_t bytes, uint32_t divisions) {
  if (IsPowerOfTwo(bytes)) return bytes;
  const uint64_t floor = uint64_t{1} << Log2Floor(bytes);
  const uint64_t step = floor >> Log2Floor(divisions);
  if (step == 0) return floor << 1;
  const uint64_t base = bytes & ~(step - 1);
  return base == bytes ? bytes : base + step;
}

// Free large-pool segments to release until `target` bytes went back: each
// sweep releases every segment unused for at least the average age of those
// left, in PyTorch's order of free blocks (stream, size, address), and sweeps
// go on while they release something.
std::vector<uint64_t> OldestLargeSegments(
    uint64_t target, const std::vector<FreeRegion>& free_regions) {
  std::vector<FreeRegion> candidates;
  for (const FreeRegion& region : free_regions) {
    if (region.pool == kLargePool) candidates.push_back(region);
  }
  std::sort(candidates.begin(), candidates.end(), [](auto& a, auto& b) {
    return std::tie(a.stream_slot, a.bytes, a.start) <
           std::tie(b.stream_slot, b.bytes, b.start);
  });
  uint64_t total_age = 0;
  for (const FreeRegion& region : candidates) total_age += region.age;
  std::vector<bool> released(candidates.size(), false);
  std::vector<uint64_t> order;
  size_t left = candidates.size();
  uint64_t reclaimed = 0;
  for (bool freed = true; reclaimed < target && freed && left > 0;) {
    const double average = static_cast<double>(total_age) / left;
    freed = false;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (released[i] || static_cast<double>(candidates[i].age) < average)
        continue;
      released[i] = freed = true;
      reclaimed += candidates[i].bytes;
      total_age -= candidates[i].age;
      --left;
      order.push_back(candidates[i].start);
    }
  }
  return order;
}

// PyTorch's release of oversize blocks for one request of `wanted` bytes:
// the smallest free oversize segment that holds it (lowest address on
// ties), or else the largest ones down to `max_split` until together they
// hold it. true when enough went back; what went back stays released.
bool OversizeSegmentsFor(uint64_t wanted, uint64_t max_split,
                         std::vector<FreeRegion> regions,
                         std::vector<uint64_t>& release) {
  std::sort(regions.begin(), regions.end(), [](auto& a, auto& b) {
    return std::tie(a.bytes, a.start) < std::tie(b.bytes, b.start);
  });
  const auto fit = std::find_if(regions.begin(), regions.end(),
                                [&](auto& r) { return r.bytes >= wanted; });
  if (fit != regions.end()) {
    release.push_back(fit->start);
    return true;
  }
  uint64_t released = 0;
  for (auto it = regions.rbegin();
       it != regions.rend() && released < wanted && it->bytes >= max_split;
       ++it) {
    release.push_back(it->start);
    released += it->bytes;
  }
  return released >= wanted;
}

class PytorchPolicy final : public AllocationPolicy {
 public:
  PytorchPolicy(const PolicyEnvironment& environment,
                const PytorchConfig& config, std::string description)
      : config_(config),
        description_(std::move(description)),
        release_threshold_(static_cast<uint64_t>(
            config.garbage_collection_threshold *
            static_cast<double>(environment.memory_limit))) {}

  std::string Describe() const override { return description_; }

  std::optional<uint64_t> RoundedSize(uint64_t bytes) const override {
    if (bytes > UINT64_MAX / 2) return std::nullopt;
    if (bytes < kMinBlockSize) return kMinBlockSize;
    const uint32_t divisions = config_.DivisionsFor(bytes);
    if (divisions > 1 && bytes > kMinBlockSize * divisions)
      return RoundToDivision(bytes, divisions);
    return RoundUp(bytes, kMinBlockSize);
  }

  int NumPools() const override { return 2; }
  int PoolFor(uint64_t rounded) const override {
    return rounded <= kSmallSize ? kSmallPool : kLargePool;
  }

  bool MayServe(uint64_t chunk_size, uint64_t rounded) const override {
    const uint64_t max_split = config_.max_split_size;
    // An oversize block never serves a smaller request, and serves an
    // oversize one only within the rounding allowance.
    if (rounded < max_split) return chunk_size < max_split;
    return chunk_size - rounded < config_.max_non_split_rounding;
  }

  // Expandable segments pass over a segment's free tail (it can grow for
  // this request later) whenever a larger free block fits.
  uint64_t TailKeptFromRequestsBelow() const override {
    return config_.expandable_segments ? UINT64_MAX : 0;
  }

  bool ShouldSplit(uint64_t chunk_size, uint64_t rounded,
                   int pool) const override {
    const uint64_t remaining = chunk_size - rounded;
    // Pages of an expandable segment are unmapped one by one, so a split
    // never strands memory there: any remainder is cut off.
    if (pool == kSmallPool || config_.expandable_segments)
      return remaining >= kMinBlockSize;
    return rounded < config_.max_split_size && remaining > kSmallSize;
  }

  uint64_t RegionBytes(const GrowthRequest& request) override {
    uint64_t bytes = 0;
    if (config_.expandable_segments) {
      const uint64_t page =
          request.pool == kSmallPool ? kSmallBuffer : kLargeBuffer;
      const uint64_t lacking = request.rounded > request.free_tail
                                   ? request.rounded - request.free_tail
                                   : kMinBlockSize;
      bytes = CheckedRoundUp(lacking, page).value_or(UINT64_MAX);
    } else if (request.pool == kSmallPool) {
      bytes = kSmallBuffer;
    } else if (request.rounded < kMinLargeAlloc) {
      bytes = kLargeBuffer;
    } else {
      bytes = CheckedRoundUp(request.rounded, kRoundLarge).value_or(UINT64_MAX);
    }
    // A segment is all or nothing: past the limit the request fails.
    return bytes <= request.headroom ? bytes : 0;
  }

  // A block freed on one stream is reused only by that stream (PyTorch keys
  // its free blocks by stream before size).
  bool SeparatesStreams() const override { return true; }
  bool ServesFromNewRegion() const override { return true; }
  bool MergesRegions() const override { return config_.expandable_segments; }
  bool ReleasesFreeRegionsBeforeFailing() const override { return true; }
  bool ReleaseForRequest(uint64_t rounded,
                         const std::vector<FreeRegion>& free_regions,
                         std::vector<uint64_t>& release) const override {
    if (config_.max_split_size == UINT64_MAX) return false;
    return OversizeSegmentsFor(std::max(rounded, config_.max_split_size),
                               config_.max_split_size, free_regions, release);
  }
  // PyTorch empties the large pool's free blocks, then the small pool's,
  // each in its order of free blocks (stream, size, address).
  void OrderForRelease(std::vector<FreeRegion>& regions) const override {
    std::sort(regions.begin(), regions.end(), [](auto& a, auto& b) {
      return std::tie(b.pool, a.stream_slot, a.bytes, a.start) <
             std::tie(a.pool, b.stream_slot, b.bytes, b.start);
    });
  }
  // garbage_collection_threshold (pages of expandable segments are never
  // collected: they are unmapped only before an out-of-memory error).
  bool ReleasesBeforeGrowth() const override {
    return release_threshold_ > 0 && !config_.expandable_segments;
  }
  std::vector<uint64_t> RegionsToRelease(
      uint64_t pool_bytes,
      const std::vector<FreeRegion>& free_regions) const override {
    if (pool_bytes <= release_threshold_) return {};
    return OldestLargeSegments(pool_bytes - release_threshold_, free_regions);
  }

 private:
  const PytorchConfig config_;
  const std::string description_;
  const uint64_t release_threshold_;
};

absl::StatusOr<std::unique_ptr<AllocationPolicy>> MakePytorchPolicy(
    const PolicyEnvironment& environment,
    const std::vector<ConfigEntry>& config) {
  absl::StatusOr<PytorchConfig> parsed = ParsePytorchConfig(config);
  if (!parsed.ok()) return parsed.status();
  if (parsed->expandable_segments && !environment.upstream_coalesces) {
    return absl::InvalidArgumentError(
        "pytorch policy: expandable_segments:True needs a sub-allocator that "
        "extends regions contiguously (vmm, or simulated with coalescing)");
  }
  std::string description = "pytorch";
  for (const ConfigEntry& entry : config) {
    absl::StrAppend(&description, description == "pytorch" ? "(" : ",",
                    entry.key, ":", entry.value);
  }
  if (!config.empty()) description += ")";
  return std::make_unique<PytorchPolicy>(environment, *parsed,
                                         std::move(description));
}

}  // namespace

RegisteredPolicy PytorchPolicyEntry() {
  return {{"pytorch",
           "a model of PyTorch's CUDA caching allocator",
           "max_split_size_mb, max_non_split_rounding_mb, "
           "roundup_power2_divisions, garbage_collection_threshold, "
           "expandable_segments",
           {"expandable_segments:True", "max_split_size_mb:21",
            "roundup_power2_divisions:4", "garbage_collection_threshold:0.5",
            "max_non_split_rounding_mb:4,"
            "roundup_power2_divisions:[1:1,64:8,>:2]"}},
          MakePytorchPolicy};
}

}  // namespace tensormem::internal
