#include "plan/solver/peak_pack.h"

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "plan/solver/kept_offsets.h"
#include "plan/solver/local_moves.h"
#include "plan/solver/peak_split.h"
#include "tensormem/core/checked_math.h"

namespace tensormem::solver_internal {

std::optional<std::vector<uint64_t>> PackAtPeak(
    const BufferSet& set, const std::vector<UsageRecord<>>& records,
    std::span<const uint64_t> offsets, const OptimalPlanOptions& options,
    double seconds) {
  const std::optional<int64_t> peak = FirstPeakTime(set);
  if (!peak) return std::nullopt;
  std::vector<size_t> at_peak;
  for (size_t i = 0; i < set.buffers.size(); ++i) {
    const Buffer& buffer = set.buffers[i];
    if (buffer.size > 0 && buffer.lower <= *peak && *peak < buffer.upper)
      at_peak.push_back(i);
  }
  std::sort(at_peak.begin(), at_peak.end(), [&](size_t a, size_t b) {
    return std::pair(offsets[a], a) < std::pair(offsets[b], b);
  });
  BufferSet packed = set;
  for (Buffer& buffer : packed.buffers) buffer.offset.reset();
  uint64_t top = 0;
  for (size_t i : at_peak) {
    packed.buffers[i].offset = top;
    top = RoundUp(top + packed.buffers[i].size, options.alignment);
  }
  // Best fit around the packed buffers first: only a start that ends below
  // the plan given is worth the time of the steps after it.
  OptimalPlanOptions around;
  around.alignment = options.alignment;
  around.threads = options.threads;
  around.cancel = options.cancel;
  around.keep_given_offsets = true;
  absl::StatusOr<std::vector<uint64_t>> start =
      StartAroundKeptOffsets(packed, records, around);
  if (!start.ok() || TotalSize(records, *start) >=
                         TotalSize(records, {offsets.begin(), offsets.end()}))
    return std::nullopt;
  around.start_offsets = *std::move(start);
  around.time_limit_seconds = seconds;
  absl::StatusOr<OptimalPlanResult> plan = PlanOptimal(packed, around);
  if (!plan.ok()) return std::nullopt;
  std::vector<uint64_t> result(set.buffers.size());
  for (size_t i = 0; i < result.size(); ++i)
    result[i] = *plan->placed.buffers[i].offset;
  return result;
}

}  // namespace tensormem::solver_internal
