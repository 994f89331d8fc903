#include "plan/solver/start_plan.h"

#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "plan/solver/kept_offsets.h"
#include "plan/solver/local_moves.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/offset_strategies.h"

namespace tensormem::solver_internal {
namespace {

// GREEDY_BY_SIZE is quadratic; above this the best-fit family alone starts.
constexpr size_t kMaxGreedyBySizeBuffers = 5000;

absl::Status StartKeepsGivenOffsets(const BufferSet& set,
                                    const std::vector<uint64_t>& start) {
  for (size_t i = 0; i < set.buffers.size(); ++i) {
    const std::optional<uint64_t> given = set.buffers[i].offset;
    if (given && *given != start[i]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "start plan moves kept buffer %d from offset %d to %d",
          set.buffers[i].id, *given, start[i]));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint64_t>> CheckedCallersPlan(
    const BufferSet& set, const OptimalPlanOptions& options) {
  if (options.start_offsets.size() != set.buffers.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("start plan has %d offsets for %d buffers",
                        options.start_offsets.size(), set.buffers.size()));
  }
  if (options.keep_given_offsets)
    TM_RETURN_IF_ERROR(StartKeepsGivenOffsets(set, options.start_offsets));
  BufferSet placed = set;
  for (size_t i = 0; i < placed.buffers.size(); ++i) {
    placed.buffers[i].offset = options.start_offsets[i];
  }
  if (absl::Status valid = CheckPlacement(placed, options.alignment);
      !valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("start plan is not valid: %s", valid.message()));
  }
  return options.start_offsets;
}

}  // namespace

absl::StatusOr<std::vector<uint64_t>> StartOffsets(
    const BufferSet& set, const std::vector<UsageRecord<>>& records,
    const OptimalPlanOptions& options) {
  if (!options.start_offsets.empty()) return CheckedCallersPlan(set, options);
  if (options.keep_given_offsets)
    return StartAroundKeptOffsets(set, records, options);
  TM_ASSIGN_OR_RETURN(BestFitResult best_fit,
                      BestFitMulti(records, options.alignment));
  std::vector<uint64_t> offsets = std::move(best_fit.offsets.offsets);
  if (records.size() <= kMaxGreedyBySizeBuffers) {
    absl::StatusOr<OffsetsAssignment> by_size =
        GreedyBySizeOffsets(records, options.alignment);
    if (by_size.ok() &&
        TotalSize(records, by_size->offsets) < TotalSize(records, offsets)) {
      offsets = std::move(by_size->offsets);
    }
  }
  return offsets;
}

}  // namespace tensormem::solver_internal
