// FindMinimumLimit: bisection over limits in units of kMinLimitPrecision.
#include "absl/strings/str_format.h"
#include "tensormem/core/units.h"
#include "tensormem/trace/replay.h"

namespace tensormem {
namespace {

absl::StatusOr<bool> FitsWithin(
    const PreparedTrace& trace,
    const std::function<absl::StatusOr<ReplayTarget>(uint64_t)>& make_target,
    uint64_t limit, int& replays) {
  absl::StatusOr<ReplayTarget> target = make_target(limit);
  if (!target.ok()) return target.status();
  ++replays;
  return ReplaysWithoutFailure(trace, *target);
}

}  // namespace

absl::StatusOr<MinimumLimit> FindMinimumLimit(
    const PreparedTrace& trace,
    const std::function<absl::StatusOr<ReplayTarget>(uint64_t limit)>&
        make_target,
    uint64_t max_limit) {
  constexpr uint64_t kUnit = kMinLimitPrecision;
  const uint64_t peak = trace.peak_live_bytes();
  MinimumLimit result;
  if (peak == 0) return result;  // nothing is ever live: any limit works
  // Invariant: `low` units do not fit, `high` units do.
  uint64_t low =
      (peak + kUnit - 1) / kUnit - 1;  // low * kUnit < peak: cannot fit
  uint64_t high = 2 * low + 2;
  while (true) {
    if (high > max_limit / kUnit) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("no memory limit up to %s replays the trace without "
                          "a failed allocation (peak live %s)",
                          HumanBytes(max_limit), HumanBytes(peak)));
    }
    absl::StatusOr<bool> fits =
        FitsWithin(trace, make_target, high * kUnit, result.replays);
    if (!fits.ok()) return fits.status();
    if (*fits) break;
    low = high;
    high *= 2;
  }
  while (high - low > 1) {
    const uint64_t middle = low + (high - low) / 2;
    absl::StatusOr<bool> fits =
        FitsWithin(trace, make_target, middle * kUnit, result.replays);
    if (!fits.ok()) return fits.status();
    (*fits ? high : low) = middle;
  }
  result.limit_bytes = high * kUnit;
  result.ratio = static_cast<double>(result.limit_bytes) / peak;
  return result;
}

}  // namespace tensormem
