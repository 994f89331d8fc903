// `tf`: TensorFlow's BFC decisions, exactly (bfc_policy.h holds the rules).
//
// 256-byte rounding, one pool, best fit, TensorFlow's split rule, and regions
// that start at 2 MiB and double (or one region of the whole limit without
// growth), asking for less when the upstream refuses.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "alloc/policies/policies.h"
#include "tensormem/alloc/bfc_policy.h"

namespace tensormem::internal {
namespace {

// NaN or a fraction <= 0 means the default; a fraction past 1 means the whole
// limit (casting a product beyond 2^64 is undefined). At least one allocation
// unit, so a split never leaves an empty chunk behind.
uint64_t MaxInternalFragmentation(const PolicyEnvironment& environment) {
  const double fraction = environment.fragmentation_fraction;
  if (!(fraction > 0)) return bfc::kDefaultMaxInternalFragmentation;
  const uint64_t bytes =
      fraction >= 1
          ? environment.memory_limit
          : static_cast<uint64_t>(
                fraction * static_cast<double>(environment.memory_limit));
  return std::max(bytes, bfc::kMinAllocationSize);
}

class TfPolicy final : public AllocationPolicy {
 public:
  explicit TfPolicy(const PolicyEnvironment& environment)
      : memory_limit_(environment.memory_limit),
        max_internal_fragmentation_(MaxInternalFragmentation(environment)),
        // Without growth the first region is the whole limit.
        region_bytes_(
            bfc::RoundedBytes(
                environment.allow_growth
                    ? std::min(memory_limit_, bfc::kInitialGrowthRegionBytes)
                    : memory_limit_)
                .value_or(memory_limit_)) {}

  std::string Describe() const override { return "tf"; }

  std::optional<uint64_t> RoundedSize(uint64_t bytes) const override {
    return bfc::RoundedBytes(bytes);
  }

  bool ShouldSplit(uint64_t chunk_size, uint64_t rounded,
                   int /*pool*/) const override {
    return bfc::ShouldSplit(chunk_size, rounded, max_internal_fragmentation_);
  }

  std::optional<InlineDecisions> Inline() const override {
    return InlineDecisions{.split_tail_bytes = max_internal_fragmentation_,
                           .split_at_double = true};
  }

  uint64_t RegionBytes(const GrowthRequest& request) override {
    if (request.rounded > request.headroom) return 0;
    increased_region_size_ = false;
    while (request.rounded > region_bytes_) {
      region_bytes_ = bfc::DoubledRegionBytes(region_bytes_);
      increased_region_size_ = true;
    }
    return std::min(region_bytes_, request.headroom);
  }

  uint64_t SmallerRegionBytes(uint64_t refused,
                              const GrowthRequest& request) const override {
    const uint64_t smaller = bfc::BackpedalBytes(refused);
    return smaller >= request.rounded ? smaller : 0;
  }

  void RegionAdded(const GrowthRequest& /*request*/) override {
    // Beyond the limit doubling changes nothing (requests are capped by it).
    if (!increased_region_size_ && region_bytes_ < memory_limit_)
      region_bytes_ = bfc::DoubledRegionBytes(region_bytes_);
  }

 private:
  const uint64_t memory_limit_;
  const uint64_t max_internal_fragmentation_;
  uint64_t region_bytes_;  // size of the next region to ask for
  bool increased_region_size_ = false;
};

absl::StatusOr<std::unique_ptr<AllocationPolicy>> MakeTfPolicy(
    const PolicyEnvironment& environment,
    const std::vector<ConfigEntry>& config) {
  if (!config.empty()) return UnknownConfigKey("tf", config.front().key, "");
  return std::make_unique<TfPolicy>(environment);
}

}  // namespace

RegisteredPolicy TfPolicyEntry() {
  return {{"tf", "TensorFlow's BFC allocator, decision for decision", ""},
          MakeTfPolicy};
}

}  // namespace tensormem::internal
