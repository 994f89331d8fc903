// PytorchConfig: the knobs of PyTorch's CUDA caching allocator, parsed from
// PYTORCH_CUDA_ALLOC_CONF's syntax (already split into key:value entries).
#ifndef TENSORMEM_SRC_ALLOC_POLICIES_PYTORCH_CONFIG_H_
#define TENSORMEM_SRC_ALLOC_POLICIES_PYTORCH_CONFIG_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/alloc/policy_registry.h"

namespace tensormem::internal {

struct PytorchConfig {
  // Power-of-two size intervals, from 1 MiB up, that roundup_power2_divisions
  // configures separately (the first also covers everything below 1 MiB).
  static constexpr int kRoundupIntervals = 16;

  uint64_t max_split_size = UINT64_MAX;  // oversize blocks are never split
  uint64_t max_non_split_rounding = 20 << 20;
  std::array<uint32_t, kRoundupIntervals> roundup_divisions{};  // 0: none
  double garbage_collection_threshold = 0;                      // 0: off
  bool expandable_segments = false;

  // The divisions that apply to a request of `bytes`.
  uint32_t DivisionsFor(uint64_t bytes) const;
};

inline constexpr char kPytorchConfigKeys[] =
    "max_split_size_mb, max_non_split_rounding_mb, roundup_power2_divisions, "
    "garbage_collection_threshold, expandable_segments, backend";

// Errors name the key and what it accepts.
absl::StatusOr<PytorchConfig> ParsePytorchConfig(
    const std::vector<ConfigEntry>& entries);

}  // namespace tensormem::internal

#endif  // TENSORMEM_SRC_ALLOC_POLICIES_PYTORCH_CONFIG_H_
