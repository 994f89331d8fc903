#include "plan/solver/peak_pack.h"

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "plan/solver/kept_offsets.h"
#include "plan/solver/local_moves.h"
#include "plan/solver/peak_split.h"
#include "tensormem/core/checked_math.h"

namespace tensormem::solver_internal {
namespace {

// Beyond this many buffers live at the peaks together, packing them (a scan
// of the packed ones per buffer) would cost more than the start is worth.
constexpr size_t kMaxPackedBuffers = 20000;

// The lowest aligned offset at or above `floor` where `buffer` overlaps no
// buffer of `packed` (offsets set) live with it; nullopt on overflow.
std::optional<uint64_t> LowestFreeOffset(const BufferSet& packed,
                                         const std::vector<size_t>& placed,
                                         const Buffer& buffer, uint64_t floor,
                                         uint64_t alignment) {
  std::vector<std::pair<uint64_t, uint64_t>> taken;
  for (size_t j : placed) {
    const Buffer& other = packed.buffers[j];
    if (buffer.LiveAtSameTime(other))
      taken.emplace_back(*other.offset, *other.offset + other.size);
  }
  std::sort(taken.begin(), taken.end());
  std::optional<uint64_t> offset = CheckedRoundUp(floor, alignment);
  for (const auto& [begin, end] : taken) {
    if (!offset) return std::nullopt;
    const std::optional<uint64_t> top = CheckedAdd(*offset, buffer.size);
    if (!top) return std::nullopt;
    if (end <= *offset) continue;
    if (begin >= *top) break;
    offset = CheckedRoundUp(end, alignment);
  }
  return offset;
}

// At each peak time, the buffers live then are packed in the order of
// `offsets`, each as low as the ones packed before it allow and above the
// one before it in that order; those packed at an earlier peak stay.
bool PackEveryPeak(const BufferSet& set, const std::vector<uint64_t>& offsets,
                   uint64_t alignment, BufferSet& packed) {
  std::vector<size_t> placed;
  for (const int64_t time : PeakTimes(set)) {
    std::vector<size_t> live;
    for (size_t i = 0; i < set.buffers.size(); ++i) {
      const Buffer& buffer = set.buffers[i];
      if (buffer.size > 0 && buffer.lower <= time && time < buffer.upper)
        live.push_back(i);
    }
    if (placed.size() + live.size() > kMaxPackedBuffers) return false;
    std::sort(live.begin(), live.end(), [&](size_t a, size_t b) {
      return std::pair(offsets[a], a) < std::pair(offsets[b], b);
    });
    uint64_t floor = 0;
    for (size_t i : live) {
      Buffer& buffer = packed.buffers[i];
      if (!buffer.offset) {
        const std::optional<uint64_t> offset =
            LowestFreeOffset(packed, placed, buffer, floor, alignment);
        if (!offset) return false;
        buffer.offset = offset;
        placed.push_back(i);
      }
      floor = std::max(floor, *buffer.offset + buffer.size);
    }
  }
  return !placed.empty();
}

}  // namespace

std::optional<std::vector<uint64_t>> PackAtPeak(
    const BufferSet& set, const std::vector<UsageRecord<>>& records,
    const std::vector<uint64_t>& offsets, const OptimalPlanOptions& options,
    double seconds) {
  BufferSet packed = set;
  for (Buffer& buffer : packed.buffers) buffer.offset.reset();
  if (!PackEveryPeak(set, offsets, options.alignment, packed))
    return std::nullopt;
  // Best fit around the packed buffers first: only a start that ends below
  // the plan given is worth the time of the steps after it.
  OptimalPlanOptions around;
  around.alignment = options.alignment;
  around.threads = options.threads;
  around.cancel = options.cancel;
  around.counted_time = options.counted_time;
  around.keep_given_offsets = true;
  absl::StatusOr<std::vector<uint64_t>> start =
      StartAroundKeptOffsets(packed, records, around);
  if (!start.ok() || TotalSize(records, *start) >= TotalSize(records, offsets))
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
