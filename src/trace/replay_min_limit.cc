// FindMinimumLimit: bisection over limits in units of kMinLimitPrecision, then
// an upward scan below the bisection's answer when affordable, since BFC-style
// allocators are not monotone in their limit.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "tensormem/core/units.h"
#include "tensormem/trace/replay.h"

namespace tensormem {
namespace {

constexpr uint64_t kUnit = kMinLimitPrecision;

using TargetFactory =
    std::function<absl::StatusOr<ReplayTarget>(uint64_t limit)>;

absl::StatusOr<bool> FitsWithin(const PreparedTrace& trace,
                                const TargetFactory& make_target,
                                uint64_t limit, int& replays) {
  absl::StatusOr<ReplayTarget> target = make_target(limit);
  if (!target.ok()) return target.status();
  ++replays;
  return ReplaysWithoutFailure(trace, *target);
}

// A limit (in units) that serves the trace, doubled from twice `low`; `low`
// ends as the last doubling that failed.
absl::StatusOr<uint64_t> FindWorkingLimit(const PreparedTrace& trace,
                                          const TargetFactory& make_target,
                                          uint64_t max_limit, uint64_t& low,
                                          int& replays) {
  uint64_t high = 2 * low + 2;
  while (true) {
    if (high > max_limit / kUnit) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "no memory limit up to %s replays the trace without a failed "
          "allocation (peak live %s)",
          HumanBytes(max_limit), HumanBytes(trace.peak_live_bytes())));
    }
    absl::StatusOr<bool> fits =
        FitsWithin(trace, make_target, high * kUnit, replays);
    if (!fits.ok()) return fits.status();
    if (*fits) return high;
    low = high;
    high *= 2;
  }
}

}  // namespace

std::string_view MinLimitMethodName(MinLimitMethod method) {
  return method == MinLimitMethod::kExactScan ? "exact scan"
                                              : "bisection (assumes monotone)";
}

absl::StatusOr<MinimumLimit> FindMinimumLimit(const PreparedTrace& trace,
                                              const TargetFactory& make_target,
                                              uint64_t max_limit,
                                              uint64_t scan_budget_events) {
  const uint64_t peak = trace.peak_live_bytes();
  MinimumLimit result;
  if (peak == 0) {  // nothing is ever live: any limit works
    result.method = MinLimitMethod::kExactScan;
    return result;
  }
  // Invariant: `low` units do not fit (low * kUnit < peak), `high` units do.
  const uint64_t floor = (peak + kUnit - 1) / kUnit;
  uint64_t low = floor - 1;
  absl::StatusOr<uint64_t> working =
      FindWorkingLimit(trace, make_target, max_limit, low, result.replays);
  if (!working.ok()) return working.status();
  uint64_t high = *working;
  while (high - low > 1) {
    const uint64_t middle = low + (high - low) / 2;
    absl::StatusOr<bool> fits =
        FitsWithin(trace, make_target, middle * kUnit, result.replays);
    if (!fits.ok()) return fits.status();
    (*fits ? high : low) = middle;
  }
  result.bisection_limit_bytes = high * kUnit;
  // Exact: the first limit from the floor up that serves. Failing trials stop
  // at their first failed allocation, so the budget is a pessimistic bound.
  const uint64_t steps = high - floor;
  const uint64_t events = std::max<uint64_t>(trace.steps().size(), 1);
  if (steps <= scan_budget_events / events) {
    result.method = MinLimitMethod::kExactScan;
    for (uint64_t units = floor; units < high; ++units) {
      absl::StatusOr<bool> fits =
          FitsWithin(trace, make_target, units * kUnit, result.replays);
      if (!fits.ok()) return fits.status();
      if (*fits) {
        high = units;
        break;
      }
    }
  }
  result.limit_bytes = high * kUnit;
  result.ratio = static_cast<double>(result.limit_bytes) / peak;
  return result;
}

nlohmann::json MinimumLimitToJson(const MinimumLimit& limit) {
  return {{"min_limit_bytes", limit.limit_bytes},
          {"min_limit_ratio", limit.ratio},
          {"min_limit_method", MinLimitMethodName(limit.method)},
          {"min_limit_bisection_bytes", limit.bisection_limit_bytes},
          {"min_limit_replays", limit.replays}};
}

}  // namespace tensormem
