#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/str_format.h"
#include "plan/placed_interval_index.h"
#include "tensormem/core/checked_math.h"
#include "tensormem/plan/offset_strategies.h"

namespace tensormem {
namespace {

uint64_t Duration(const UsageRecord<>& r) {
  return r.last_task - r.first_task + 1;
}

std::vector<size_t> VisitOrder(const std::vector<UsageRecord<>>& records,
                               PlacementOrder order) {
  std::vector<size_t> tensors(records.size());
  std::iota(tensors.begin(), tensors.end(), 0);
  // (primary, secondary) key, larger first.
  auto key = [&](size_t i) -> std::pair<unsigned __int128, uint64_t> {
    const UsageRecord<>& r = records[i];
    switch (order) {
      case PlacementOrder::kSizeThenDuration:
        return {r.tensor_size, Duration(r)};
      case PlacementOrder::kDurationThenSize:
        return {Duration(r), r.tensor_size};
      case PlacementOrder::kArea:
        break;
    }
    return {static_cast<unsigned __int128>(r.tensor_size) * Duration(r),
            r.tensor_size};
  };
  std::stable_sort(tensors.begin(), tensors.end(),
                   [&](size_t a, size_t b) { return key(a) > key(b); });
  return tensors;
}

// Chooses the offset of a tensor of `size` bytes among the placed tensors
// `overlapping` (sorted by offset): a gap between them by `rule`, or the
// aligned end of the highest one.
uint64_t ChooseOffset(
    const std::vector<std::pair<uint64_t, uint64_t>>& overlapping,
    uint64_t size, GapRule rule, uint64_t alignment) {
  uint64_t cursor = 0;  // lowest aligned offset above everything seen so far
  uint64_t best_offset = 0;
  uint64_t best_gap = UINT64_MAX;
  for (const auto& [offset, end] : overlapping) {
    if (offset >= cursor && offset - cursor >= size) {
      if (rule == GapRule::kFirstFit) return cursor;
      if (offset - cursor < best_gap) {
        best_gap = offset - cursor;
        best_offset = cursor;
      }
    }
    cursor = std::max(cursor, RoundUp(end, alignment));
  }
  return best_gap == UINT64_MAX ? cursor : best_offset;
}

}  // namespace

OffsetsAssignment PlaceInOrder(const std::vector<UsageRecord<>>& records,
                               PlacementOrder order, GapRule rule,
                               uint64_t alignment) {
  OffsetsAssignment result;
  result.offsets.assign(records.size(), 0);
  internal::PlacedIntervalIndex index(records);
  std::vector<size_t> found;
  std::vector<std::pair<uint64_t, uint64_t>> overlapping;  // (offset, end)
  for (size_t tensor : VisitOrder(records, order)) {
    const UsageRecord<>& record = records[tensor];
    if (record.tensor_size == 0) continue;  // occupies no bytes: offset 0
    found.clear();
    index.FindOverlapping(record.first_task, record.last_task, found);
    overlapping.clear();
    for (size_t placed : found) {
      overlapping.emplace_back(
          result.offsets[placed],
          result.offsets[placed] + records[placed].tensor_size);
    }
    std::sort(overlapping.begin(), overlapping.end());
    const uint64_t offset =
        ChooseOffset(overlapping, record.tensor_size, rule, alignment);
    result.offsets[tensor] = offset;
    result.total_size =
        std::max(result.total_size, offset + record.tensor_size);
    index.Place(tensor);
  }
  return result;
}

absl::StatusOr<BestFitResult> BestFitMulti(
    const std::vector<UsageRecord<>>& records, uint64_t alignment) {
  if (alignment == 0)
    return absl::InvalidArgumentError("alignment must be positive, got 0");
  // Every placement ends below the sum of aligned sizes; check it fits.
  uint64_t bound = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const std::optional<uint64_t> aligned =
        CheckedRoundUp(records[i].tensor_size, alignment);
    const std::optional<uint64_t> sum =
        aligned ? CheckedAdd(bound, *aligned) : std::nullopt;
    if (!sum) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "record %d: the sum of aligned sizes overflows 64 bits", i));
    }
    bound = *sum;
  }
  struct Variant {
    PlacementOrder order;
    GapRule rule;
    const char* name;
  };
  constexpr Variant kVariants[] = {
      {PlacementOrder::kSizeThenDuration, GapRule::kBestFit,
       "size_then_duration/best_fit"},
      {PlacementOrder::kDurationThenSize, GapRule::kBestFit,
       "duration_then_size/best_fit"},
      {PlacementOrder::kArea, GapRule::kBestFit, "area/best_fit"},
      {PlacementOrder::kSizeThenDuration, GapRule::kFirstFit,
       "size_then_duration/first_fit"},
  };
  BestFitResult best;
  for (const Variant& variant : kVariants) {
    OffsetsAssignment plan =
        PlaceInOrder(records, variant.order, variant.rule, alignment);
    if (best.variant.empty() || plan.total_size < best.offsets.total_size) {
      best.offsets = std::move(plan);
      best.variant = variant.name;
    }
  }
  return best;
}

}  // namespace tensormem
