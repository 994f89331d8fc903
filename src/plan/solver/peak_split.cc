#include "plan/solver/peak_split.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/status/statusor.h"

namespace tensormem::solver_internal {
namespace {

// The time just after the first peak of live bytes, when the peak comes
// back later; nullopt otherwise.
std::optional<int64_t> CutAfterFirstPeak(const BufferSet& set) {
  // Live bytes change at lifetime ends; a delta map keeps them in order.
  // Sizes are summed in 128 bits: no set overflows them.
  std::map<int64_t, __int128> deltas;
  for (const Buffer& buffer : set.buffers) {
    deltas[buffer.lower] += buffer.size;
    deltas[buffer.upper] -= buffer.size;
  }
  __int128 live = 0, peak = 0;
  int64_t first_peak = 0;
  for (const auto& [time, delta] : deltas) {
    live += delta;
    if (live > peak) {
      peak = live;
      first_peak = time;
    }
  }
  if (peak == 0) return std::nullopt;
  bool fell = false;
  live = 0;
  for (const auto& [time, delta] : deltas) {
    live += delta;
    if (time <= first_peak) continue;
    fell = fell || 4 * live <= 3 * peak;
    if (fell && 100 * live >= 99 * peak) return first_peak + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<uint64_t>> SplitAtFirstPeak(
    const BufferSet& set, const OptimalPlanOptions& options, double seconds) {
  const std::optional<int64_t> cut = CutAfterFirstPeak(set);
  if (!cut) return std::nullopt;
  BufferSet first;
  std::vector<size_t> first_index;
  for (size_t i = 0; i < set.buffers.size(); ++i) {
    if (set.buffers[i].lower >= *cut) continue;
    Buffer clipped = set.buffers[i];
    clipped.upper = std::min(clipped.upper, *cut);
    clipped.offset.reset();
    first.buffers.push_back(clipped);
    first_index.push_back(i);
  }
  const size_t n = set.buffers.size();
  if (8 * first_index.size() < n || 8 * (n - first_index.size()) < n)
    return std::nullopt;

  OptimalPlanOptions part;
  part.alignment = options.alignment;
  part.threads = options.threads;
  part.cancel = options.cancel;
  part.time_limit_seconds = seconds / 2;
  absl::StatusOr<OptimalPlanResult> first_plan = PlanOptimal(first, part);
  if (!first_plan.ok()) return std::nullopt;

  // Buffers live at the cut keep their offsets past it: two of them were
  // apart just before the cut, so they stay apart after it.
  BufferSet around = set;
  for (Buffer& buffer : around.buffers) buffer.offset.reset();
  for (size_t j = 0; j < first_index.size(); ++j) {
    around.buffers[first_index[j]].offset =
        first_plan->placed.buffers[j].offset;
  }
  part.keep_given_offsets = true;
  absl::StatusOr<OptimalPlanResult> whole = PlanOptimal(around, part);
  if (!whole.ok()) return std::nullopt;
  std::vector<uint64_t> offsets(n);
  for (size_t i = 0; i < n; ++i) offsets[i] = *whole->placed.buffers[i].offset;
  return offsets;
}

}  // namespace tensormem::solver_internal
