#include "plan/solver/peak_split.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/status/statusor.h"
#include "tensormem/core/checked_math.h"

namespace tensormem::solver_internal {
namespace {

// When the peak of live bytes comes back: the time of the first peak and
// the first time after it, once live bytes have fallen to 3/4 of the peak,
// that they reach 99% of it again.
struct PeakAgain {
  int64_t first = 0;
  int64_t again = 0;
};

// Live bytes change at lifetime ends; a delta map keeps them in order.
// Sizes are summed in 128 bits: no set overflows them.
std::map<int64_t, __int128> LiveByteDeltas(const BufferSet& set) {
  std::map<int64_t, __int128> deltas;
  for (const Buffer& buffer : set.buffers) {
    deltas[buffer.lower] += buffer.size;
    deltas[buffer.upper] -= buffer.size;
  }
  return deltas;
}

// The first time live bytes reach their peak, and the peak (0 for none).
std::pair<int64_t, __int128> FirstPeak(
    const std::map<int64_t, __int128>& deltas) {
  __int128 live = 0, peak = 0;
  int64_t first_peak = 0;
  for (const auto& [time, delta] : deltas) {
    live += delta;
    if (live > peak) {
      peak = live;
      first_peak = time;
    }
  }
  return {first_peak, peak};
}

std::optional<PeakAgain> FindPeakAgain(const BufferSet& set) {
  const std::map<int64_t, __int128> deltas = LiveByteDeltas(set);
  const auto [first_peak, peak] = FirstPeak(deltas);
  if (peak == 0) return std::nullopt;
  bool fell = false;
  __int128 live = 0;
  for (const auto& [time, delta] : deltas) {
    live += delta;
    if (time <= first_peak) continue;
    fell = fell || 4 * live <= 3 * peak;
    if (fell && 100 * live >= 99 * peak)
      return PeakAgain{.first = first_peak, .again = time};
  }
  return std::nullopt;
}

// Buffers live at both peaks (parameters, optimizer state) are walls for the
// part after the cut wherever the first part puts them; stacked at its
// bottom, they leave that part one room above them instead of holes.
bool LiveAtBoth(const Buffer& buffer, const PeakAgain& peaks) {
  return buffer.size > 0 && buffer.lower <= peaks.first &&
         buffer.upper > peaks.again;
}

}  // namespace

std::vector<int64_t> PeakTimes(const BufferSet& set) {
  const std::map<int64_t, __int128> deltas = LiveByteDeltas(set);
  const __int128 peak = FirstPeak(deltas).second;
  std::vector<int64_t> times;
  if (peak == 0) return times;
  __int128 live = 0;
  for (const auto& [time, delta] : deltas) {
    const bool below = live < peak;
    live += delta;
    if (below && live == peak) times.push_back(time);
  }
  return times;
}

std::optional<std::vector<uint64_t>> SplitAtFirstPeak(
    const BufferSet& set, const OptimalPlanOptions& options, double seconds) {
  const std::optional<PeakAgain> peaks = FindPeakAgain(set);
  if (!peaks) return std::nullopt;
  const int64_t cut = peaks->first + 1;
  const size_t n = set.buffers.size();
  // The walls first, from offset 0 up.
  std::vector<uint64_t> offsets(n, 0);
  std::vector<bool> placed(n, false);
  uint64_t wall_top = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!LiveAtBoth(set.buffers[i], *peaks)) continue;
    offsets[i] = wall_top;
    placed[i] = true;
    wall_top = RoundUp(wall_top + set.buffers[i].size, options.alignment);
  }
  BufferSet first;
  std::vector<size_t> first_index;
  size_t first_count = 0;
  for (size_t i = 0; i < n; ++i) {
    if (set.buffers[i].lower >= cut) continue;
    ++first_count;
    if (placed[i]) continue;
    Buffer clipped = set.buffers[i];
    clipped.upper = std::min(clipped.upper, cut);
    clipped.offset.reset();
    first.buffers.push_back(clipped);
    first_index.push_back(i);
  }
  if (8 * first_count < n || 8 * (n - first_count) < n) return std::nullopt;

  OptimalPlanOptions part;
  part.alignment = options.alignment;
  part.threads = options.threads;
  part.cancel = options.cancel;
  part.counted_time = options.counted_time;
  part.time_limit_seconds = seconds / 2;
  absl::StatusOr<OptimalPlanResult> first_plan = PlanOptimal(first, part);
  if (!first_plan.ok()) return std::nullopt;
  for (size_t j = 0; j < first_index.size(); ++j) {
    offsets[first_index[j]] = wall_top + *first_plan->placed.buffers[j].offset;
    placed[first_index[j]] = true;
  }

  // Buffers live at the cut keep their offsets past it: two of them were
  // apart just before the cut, so they stay apart after it.
  BufferSet around = set;
  for (size_t i = 0; i < n; ++i) {
    around.buffers[i].offset.reset();
    if (placed[i]) around.buffers[i].offset = offsets[i];
  }
  part.keep_given_offsets = true;
  absl::StatusOr<OptimalPlanResult> whole = PlanOptimal(around, part);
  if (!whole.ok()) return std::nullopt;
  for (size_t i = 0; i < n; ++i) offsets[i] = *whole->placed.buffers[i].offset;
  return offsets;
}

}  // namespace tensormem::solver_internal
