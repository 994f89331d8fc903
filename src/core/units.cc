#include "tensormem/core/units.h"

#include <cmath>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

namespace tensormem {
namespace {

// Returns the multiplier for a suffix such as "", "K", "KiB", "kb"; 0 if
// unknown.
uint64_t SuffixMultiplier(std::string_view suffix) {
  std::string lower =
      absl::AsciiStrToLower(absl::string_view(suffix.data(), suffix.size()));
  std::string_view rest = lower;
  if (rest.empty() || rest == "b") return 1;
  uint64_t multiplier = 0;
  switch (rest.front()) {
    case 'k':
      multiplier = kKiB;
      break;
    case 'm':
      multiplier = kMiB;
      break;
    case 'g':
      multiplier = kGiB;
      break;
    case 't':
      multiplier = kTiB;
      break;
    default:
      return 0;
  }
  rest.remove_prefix(1);
  if (rest.empty() || rest == "b" || rest == "ib") return multiplier;
  return 0;
}

}  // namespace

absl::StatusOr<uint64_t> ParseByteSize(std::string_view text) {
  // This Abseil build has its own string_view type, distinct from
  // std::string_view.
  const absl::string_view trimmed =
      absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size()));
  size_t digits_end = 0;
  while (digits_end < trimmed.size() &&
         (absl::ascii_isdigit(trimmed[digits_end]) ||
          trimmed[digits_end] == '.')) {
    ++digits_end;
  }
  const absl::string_view number = trimmed.substr(0, digits_end);
  const absl::string_view suffix =
      absl::StripAsciiWhitespace(trimmed.substr(digits_end));
  const uint64_t multiplier =
      SuffixMultiplier(std::string_view(suffix.data(), suffix.size()));
  if (number.empty() || multiplier == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("invalid size '%s': expected bytes with an optional K, "
                        "M, G or T suffix "
                        "(e.g. 4096, 512M, 2GiB)",
                        text));
  }
  if (number.find('.') == absl::string_view::npos) {
    uint64_t value;
    if (!absl::SimpleAtoi(number, &value) || value > UINT64_MAX / multiplier) {
      return absl::InvalidArgumentError(
          absl::StrFormat("invalid size '%s': out of range", text));
    }
    return value * multiplier;
  }
  double value;
  if (!absl::SimpleAtod(number, &value)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("invalid size '%s'", text));
  }
  const long double bytes = static_cast<long double>(value) * multiplier;
  if (!(bytes < 18446744073709551616.0L)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("invalid size '%s': out of range", text));
  }
  // "1.5G" is a size with a fraction of a unit; "1.5" bytes is no size.
  if (multiplier == 1 && bytes != std::floor(bytes)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "invalid size '%s': a byte count must be a whole number", text));
  }
  return static_cast<uint64_t>(bytes);
}

std::string HumanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB",
                                           "TiB", "PiB", "EiB"};
  if (bytes < kKiB) return absl::StrFormat("%dB", bytes);
  double value = static_cast<double>(bytes) / kKiB;
  int unit = 0;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  return absl::StrFormat("%.2f%s", value, kUnits[unit]);
}

}  // namespace tensormem
