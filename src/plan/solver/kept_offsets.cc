#include "plan/solver/kept_offsets.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "plan/solver/hole_fill.h"
#include "plan/solver/local_moves.h"
#include "tensormem/core/checked_math.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/solver/optimal_planner.h"

namespace tensormem::solver_internal {
namespace {

// Kept buffers that live throughout are walls (hole_fill.h): the holes
// between them are filled at the peak first, and the rest, a set of its own,
// is planned above the highest wall with a quarter of the time. Nullopt when
// the walls leave nothing to fill.
std::optional<std::vector<uint64_t>> FillHolesThenPlanTheRest(
    const BufferSet& set, const std::vector<UsageRecord<>>& records,
    const PinnedOffsets& kept, const OptimalPlanOptions& options) {
  std::optional<PinnedOffsets> filled =
      FillHolesAtThePeak(records, kept, options.alignment);
  if (!filled) return std::nullopt;
  BufferSet rest;
  std::vector<size_t> rest_index;
  uint64_t top = 0;
  for (size_t i = 0; i < set.buffers.size(); ++i) {
    if ((*filled)[i]) {
      top = std::max(top, *(*filled)[i] + set.buffers[i].size);
      continue;
    }
    rest.buffers.push_back(set.buffers[i]);
    rest_index.push_back(i);
  }
  std::vector<uint64_t> offsets(set.buffers.size(), 0);
  for (size_t i = 0; i < set.buffers.size(); ++i)
    offsets[i] = (*filled)[i].value_or(0);
  if (rest.buffers.empty()) return offsets;
  top = RoundUp(top, options.alignment);  // sizes fit int64_t (hole_fill.h)
  OptimalPlanOptions plain;
  plain.alignment = options.alignment;
  plain.time_limit_seconds = options.time_limit_seconds / 4;
  plain.threads = options.threads;
  plain.cancel = options.cancel;
  plain.counted_time = options.counted_time;
  absl::StatusOr<OptimalPlanResult> above = PlanOptimal(rest, plain);
  if (!above.ok()) return std::nullopt;
  for (size_t j = 0; j < rest_index.size(); ++j)
    offsets[rest_index[j]] = top + *above->placed.buffers[j].offset;
  return offsets;
}

}  // namespace

absl::StatusOr<std::vector<uint64_t>> StartAroundKeptOffsets(
    const BufferSet& set, const std::vector<UsageRecord<>>& records,
    const OptimalPlanOptions& options) {
  PinnedOffsets pinned(set.buffers.size());
  for (size_t i = 0; i < set.buffers.size(); ++i)
    pinned[i] = set.buffers[i].offset;
  TM_ASSIGN_OR_RETURN(BestFitResult around,
                      BestFitMulti(records, options.alignment, pinned));
  if (absl::Status valid =
          CheckOffsets(records, around.offsets, options.alignment);
      !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the given offsets are not a valid placement: %s", valid.message()));
  }
  if (std::optional<std::vector<uint64_t>> filled =
          FillHolesThenPlanTheRest(set, records, pinned, options);
      filled && TotalSize(records, *filled) < around.offsets.total_size) {
    return *std::move(filled);
  }
  return std::move(around.offsets.offsets);
}

// With given offsets kept, no placement ends below the highest of them.
uint64_t KeptOffsetsBound(const BufferSet& set, std::vector<uint8_t>& fixed) {
  uint64_t bound = 0;
  fixed.assign(set.buffers.size(), 0);
  for (size_t i = 0; i < set.buffers.size(); ++i) {
    const Buffer& buffer = set.buffers[i];
    if (!buffer.offset) continue;
    fixed[i] = 1;
    if (buffer.size > 0) bound = std::max(bound, *buffer.offset + buffer.size);
  }
  return bound;
}

}  // namespace tensormem::solver_internal
