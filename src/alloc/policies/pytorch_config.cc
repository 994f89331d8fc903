#include "alloc/policies/pytorch_config.h"

#include <algorithm>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "alloc/policies/policies.h"
#include "tensormem/core/checked_math.h"
#include "tensormem/core/units.h"

namespace tensormem::internal {
namespace {

absl::Status BadValue(const ConfigEntry& entry, absl::string_view accepted) {
  return absl::InvalidArgumentError(
      absl::StrFormat("pytorch policy: %s:%s is not valid (%s)", entry.key,
                      entry.value, std::string(accepted)));
}

absl::StatusOr<uint64_t> Megabytes(const ConfigEntry& entry, uint64_t minimum) {
  uint64_t megabytes = 0;
  if (!absl::SimpleAtoi(entry.value, &megabytes) || megabytes < minimum ||
      megabytes > (UINT64_MAX >> 20)) {
    return BadValue(entry,
                    absl::StrFormat("a whole number of MiB >= %d", minimum));
  }
  return megabytes << 20;
}

absl::StatusOr<uint32_t> PowerOfTwo(const ConfigEntry& entry,
                                    absl::string_view text) {
  uint32_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || (value != 0 && !IsPowerOfTwo(value)))
    return BadValue(entry, "divisions are 0 or a power of two");
  return value;
}

// `[256:1,512:2,>:8]`: the key is an interval start in MiB (a power of two);
// the first value also covers the intervals below it, `>` every interval after
// the last one named. A single number applies to every interval.
absl::Status ParseRoundup(const ConfigEntry& entry, PytorchConfig& config) {
  auto& divisions = config.roundup_divisions;
  absl::string_view text = entry.value;
  if (!absl::ConsumePrefix(&text, "[")) {
    absl::StatusOr<uint32_t> value = PowerOfTwo(entry, text);
    if (!value.ok()) return value.status();
    divisions.fill(*value);
    return absl::OkStatus();
  }
  if (!absl::ConsumeSuffix(&text, "]"))
    return BadValue(entry, "a list needs a closing ']'");
  int last_index = -1;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    const std::pair<absl::string_view, absl::string_view> pair =
        absl::StrSplit(item, absl::MaxSplits(':', 1));
    absl::StatusOr<uint32_t> value = PowerOfTwo(entry, pair.second);
    if (!value.ok()) return value.status();
    if (pair.first == ">") {
      std::fill(divisions.begin() + (last_index + 1), divisions.end(), *value);
      continue;
    }
    uint64_t interval_mb = 0;
    if (!absl::SimpleAtoi(pair.first, &interval_mb) ||
        !IsPowerOfTwo(interval_mb)) {
      return BadValue(entry, "interval starts are powers of two, in MiB");
    }
    const int index = std::min<int>(Log2Floor(interval_mb),
                                    PytorchConfig::kRoundupIntervals - 1);
    if (index <= last_index)
      return BadValue(entry, "intervals must be given in increasing order");
    if (last_index < 0)
      std::fill(divisions.begin(), divisions.begin() + index, *value);
    divisions[index] = *value;
    last_index = index;
  }
  return absl::OkStatus();
}

absl::Status ParseEntry(const ConfigEntry& entry, PytorchConfig& config) {
  if (entry.key == "max_split_size_mb") {
    // PyTorch refuses anything up to its 20 MiB large-segment size.
    absl::StatusOr<uint64_t> bytes = Megabytes(entry, 21);
    if (!bytes.ok()) return bytes.status();
    config.max_split_size = *bytes;
  } else if (entry.key == "max_non_split_rounding_mb") {
    absl::StatusOr<uint64_t> bytes = Megabytes(entry, 0);
    if (!bytes.ok()) return bytes.status();
    config.max_non_split_rounding = *bytes;
  } else if (entry.key == "roundup_power2_divisions") {
    return ParseRoundup(entry, config);
  } else if (entry.key == "garbage_collection_threshold") {
    double threshold = 0;
    if (!absl::SimpleAtod(entry.value, &threshold) || !(threshold > 0) ||
        !(threshold < 1)) {
      return BadValue(entry, "a fraction strictly between 0 and 1");
    }
    config.garbage_collection_threshold = threshold;
  } else if (entry.key == "expandable_segments") {
    if (entry.value != "True" && entry.value != "False")
      return BadValue(entry, "True or False");
    config.expandable_segments = entry.value == "True";
  } else if (entry.key == "backend") {
    if (entry.value != "native")
      return BadValue(entry, "only the native backend is modelled");
  } else {
    return UnknownConfigKey("pytorch", entry.key, kPytorchConfigKeys);
  }
  return absl::OkStatus();
}

}  // namespace

uint32_t PytorchConfig::DivisionsFor(uint64_t bytes) const {
  const int interval_start = Log2Floor(uint64_t{1} << 20);
  const int log_size = Log2Floor(bytes);
  const int index =
      std::min(std::max(log_size - interval_start, 0), kRoundupIntervals - 1);
  return roundup_divisions[index];
}

absl::StatusOr<PytorchConfig> ParsePytorchConfig(
    const std::vector<ConfigEntry>& entries) {
  PytorchConfig config;
  for (const ConfigEntry& entry : entries) {
    if (absl::Status status = ParseEntry(entry, config); !status.ok())
      return status;
  }
  return config;
}

}  // namespace tensormem::internal
