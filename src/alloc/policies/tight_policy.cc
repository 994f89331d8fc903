// `tight`: tensormem's own policy, made to keep the pool close to live bytes.
//
// Measured on the corpus of real PyTorch traces, TensorFlow's rules waste
// memory in two places: a chosen chunk is split only when the tail is at least
// as large as the request, so a 600 KiB tensor may hold a 1 MiB chunk; and
// regions double, so the last one is mostly empty. `tight` keeps best fit
// (smallest chunk, lowest address) but always splits off a tail of 256 bytes or
// more, and grows by what the request lacks, in granules, contiguous with the
// free tail of the last region when the upstream coalesces. Garbage collection
// also returns free trailing granules, so a region shrinks. Requests under
// 256 KiB leave the free tail of a region to larger ones while a hole fits.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "alloc/policies/policies.h"
#include "tensormem/alloc/bfc_policy.h"
#include "tensormem/core/checked_math.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/core/units.h"

namespace tensormem::internal {
namespace {

class TightPolicy final : public AllocationPolicy {
 public:
  TightPolicy(const PolicyEnvironment& environment, LoopPlanning loops,
              std::optional<bool> decommit_to_hold_peak)
      : loops_(loops),
        decommit_to_hold_peak_(decommit_to_hold_peak),
        allow_growth_(environment.allow_growth),
        memory_limit_(environment.memory_limit),
        granule_(environment.granule) {}

  std::string Describe() const override {
    std::string name = loops_ == LoopPlanning::kNone ? "tight" : "planned";
    std::vector<std::string> settings;
    if (loops_ == LoopPlanning::kInline) settings.push_back("planning inline");
    if (decommit_to_hold_peak_.has_value()) {
      settings.push_back(*decommit_to_hold_peak_ ? "decommit hold_peak"
                                                 : "decommit on_pressure");
    }
    if (granule_ != PolicyEnvironment{}.granule)
      settings.push_back(absl::StrCat("granule ", HumanBytes(granule_)));
    if (settings.empty()) return name;
    return absl::StrCat(name, "(", absl::StrJoin(settings, ", "), ")");
  }

  std::optional<uint64_t> RoundedSize(uint64_t bytes) const override {
    return bfc::RoundedBytes(bytes);
  }

  bool ShouldSplit(uint64_t chunk_size, uint64_t rounded,
                   int /*pool*/) const override {
    return chunk_size > rounded;
  }

  // Measured on the corpus: the leftover of the last granule is often the
  // smallest free chunk, so best fit put small, long-lived blocks there; they
  // pinned the top of the pool, and larger requests grew past them
  // (squeezenet training ended at 1.21x peak live, 1.04x with this rule).
  uint64_t TailKeptFromRequestsBelow() const override { return 256 * kKiB; }

  // One pool under one lock serves two threads no faster than one
  // (docs/bfc.md, Threads).
  bool AllowsThreadPools() const override { return true; }

  LoopPlanning PlansLoops() const override { return loops_; }

  std::optional<InlineDecisions> Inline() const override {
    return InlineDecisions{.split_tail_bytes = 1, .split_at_double = false};
  }

  // Measured on the corpus: with growth, holes that best fit left behind made
  // the pool end up to 1.17x peak live; giving their granules back before
  // growing brings every trace within 1.04x (mobilenet_v2 inference at batch
  // 8: 1.104 -> 1.029).
  uint64_t DecommitGranule() const override {
    return allow_growth_ ? granule_ : 0;
  }

  std::optional<bool> DecommitsToHoldPeak() const override {
    return decommit_to_hold_peak_;
  }

  uint64_t RegionBytes(const GrowthRequest& request) override {
    const uint64_t lacking = Lacking(request);
    // Without growth the one region is the whole limit.
    const uint64_t wanted =
        allow_growth_
            ? CheckedRoundUp(lacking, granule_).value_or(request.headroom)
            : memory_limit_;
    // Near the limit, a partial granule still serves the request.
    const uint64_t bytes = std::min(wanted, request.headroom);
    return bytes >= lacking ? bytes : 0;
  }

  uint64_t SmallerRegionBytes(uint64_t refused,
                              const GrowthRequest& request) const override {
    const uint64_t lacking = Lacking(request);
    return refused > lacking ? lacking : 0;
  }

 private:
  // What the free tail of the last region lacks to hold the request.
  static uint64_t Lacking(const GrowthRequest& request) {
    return request.rounded > request.free_tail
               ? request.rounded - request.free_tail
               : bfc::kMinAllocationSize;
  }

  const LoopPlanning loops_;
  const std::optional<bool> decommit_to_hold_peak_;
  const bool allow_growth_;
  const uint64_t memory_limit_;
  const uint64_t granule_;
};

absl::Status CheckGranule(const PolicyEnvironment& environment) {
  if (environment.granule == 0 ||
      environment.granule % bfc::kMinAllocationSize != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("granule ", environment.granule,
                     " is not a positive multiple of 256 bytes"));
  }
  return absl::OkStatus();
}

// The configuration of `tight` and `planned`: when free granules go back
// (both), and where loops are planned (`planned` only).
struct TightConfig {
  AllocationPolicy::LoopPlanning planning =
      AllocationPolicy::LoopPlanning::kBackground;
  std::optional<bool> decommit_to_hold_peak;  // unset: the upstream decides
};

absl::Status ParseDecommit(const ConfigEntry& entry, TightConfig& config) {
  if (entry.value != "hold_peak" && entry.value != "on_pressure") {
    return absl::InvalidArgumentError(
        absl::StrCat("decommit: '", entry.value,
                     "' is not valid (accepted: hold_peak, on_pressure)"));
  }
  config.decommit_to_hold_peak = entry.value == "hold_peak";
  return absl::OkStatus();
}

absl::Status ParsePlanning(const ConfigEntry& entry, TightConfig& config) {
  using LoopPlanning = AllocationPolicy::LoopPlanning;
  if (entry.value != "background" && entry.value != "inline") {
    return absl::InvalidArgumentError(
        absl::StrCat("planning: '", entry.value,
                     "' is not valid (accepted: background, inline)"));
  }
  config.planning = entry.value == "inline" ? LoopPlanning::kInline
                                            : LoopPlanning::kBackground;
  return absl::OkStatus();
}

absl::StatusOr<TightConfig> ParseTightConfig(
    std::string_view policy, const std::vector<ConfigEntry>& entries) {
  const bool plans = policy == "planned";
  TightConfig config;
  for (const ConfigEntry& entry : entries) {
    absl::Status parsed;
    if (entry.key == "decommit") {
      parsed = ParseDecommit(entry, config);
    } else if (plans && entry.key == "planning") {
      parsed = ParsePlanning(entry, config);
    } else {
      return UnknownConfigKey(policy, entry.key,
                              plans ? "planning, decommit" : "decommit");
    }
    if (!parsed.ok()) return parsed;
  }
  return config;
}

// `tight`, or `planned`: what no plan serves is placed as `tight` does, so
// the planned allocator's fallback never holds more than `tight` would.
absl::StatusOr<std::unique_ptr<AllocationPolicy>> MakeTightFamilyPolicy(
    std::string_view policy, const PolicyEnvironment& environment,
    const std::vector<ConfigEntry>& entries) {
  TM_ASSIGN_OR_RETURN(const TightConfig config,
                      ParseTightConfig(policy, entries));
  if (absl::Status granule = CheckGranule(environment); !granule.ok())
    return granule;
  return std::make_unique<TightPolicy>(
      environment,
      policy == "planned" ? config.planning
                          : AllocationPolicy::LoopPlanning::kNone,
      config.decommit_to_hold_peak);
}

}  // namespace

RegisteredPolicy TightPolicyEntry() {
  return {{"tight",
           "best fit, always split, grow by what is lacking (tensormem's own)",
           "decommit (hold_peak: give free granules back before growing past "
           "the high-water mark; on_pressure: only when memory is short; "
           "unset: on_pressure where a decommit drains a GPU)",
           {"decommit:on_pressure"}},
          [](const PolicyEnvironment& environment,
             const std::vector<ConfigEntry>& entries) {
            return MakeTightFamilyPolicy("tight", environment, entries);
          }};
}

RegisteredPolicy PlannedPolicyEntry() {
  return {{"planned",
           "learns a repeating loop and serves it from an offline plan; tight "
           "for the rest (planned_allocator.h)",
           "planning (background: on a thread of its own; inline: when due, "
           "on the allocating thread, the same in every run), decommit (as "
           "tight's)",
           {"planning:inline", "decommit:on_pressure"}},
          [](const PolicyEnvironment& environment,
             const std::vector<ConfigEntry>& entries) {
            return MakeTightFamilyPolicy("planned", environment, entries);
          }};
}

}  // namespace tensormem::internal
