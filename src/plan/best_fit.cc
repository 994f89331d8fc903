#include <algorithm>
#include <atomic>
#include <numeric>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "plan/occupancy_index.h"
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
      case PlacementOrder::kSize:
        return {r.tensor_size, 0};
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

}  // namespace

OffsetsAssignment PlaceInOrder(const std::vector<UsageRecord<>>& records,
                               PlacementOrder order, GapRule rule,
                               uint64_t alignment,
                               const PinnedOffsets& pinned) {
  OffsetsAssignment result;
  result.offsets.assign(records.size(), 0);
  internal::OccupancyIndex index(records);
  auto is_pinned = [&](size_t tensor) {
    return tensor < pinned.size() && pinned[tensor].has_value();
  };
  for (size_t tensor = 0; tensor < pinned.size(); ++tensor) {
    if (!is_pinned(tensor)) continue;
    const uint64_t offset = *pinned[tensor];
    result.offsets[tensor] = offset;
    if (records[tensor].tensor_size == 0) continue;
    result.total_size =
        std::max(result.total_size, offset + records[tensor].tensor_size);
    index.Place(tensor, offset);
  }
  std::vector<const internal::RangeUnion*> occupied;
  for (size_t tensor : VisitOrder(records, order)) {
    const UsageRecord<>& record = records[tensor];
    // Zero bytes occupy nothing: offset 0.
    if (record.tensor_size == 0 || is_pinned(tensor)) continue;
    index.Occupied(tensor, occupied);
    const uint64_t offset = internal::FindGap(
        occupied, record.tensor_size, rule == GapRule::kFirstFit, alignment);
    result.offsets[tensor] = offset;
    result.total_size =
        std::max(result.total_size, offset + record.tensor_size);
    index.Place(tensor, offset);
  }
  return result;
}

namespace {

// Every placement ends below the sum of aligned sizes and pinned ends: the
// inputs are refused when that sum does not fit in 64 bits, or when a pinned
// offset cannot be kept.
absl::Status CheckPlacementFits(const std::vector<UsageRecord<>>& records,
                                uint64_t alignment,
                                const PinnedOffsets& pinned) {
  if (alignment == 0)
    return absl::InvalidArgumentError("alignment must be positive, got 0");
  if (!pinned.empty() && pinned.size() != records.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d pinned offsets for %d records", pinned.size(), records.size()));
  }
  uint64_t bound = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const bool is_pinned = i < pinned.size() && pinned[i].has_value();
    if (is_pinned && *pinned[i] % alignment != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("record %d: pinned offset %d is not a multiple of %d",
                          i, *pinned[i], alignment));
    }
    const std::optional<uint64_t> end =
        is_pinned ? CheckedAdd(*pinned[i], records[i].tensor_size)
                  : CheckedRoundUp(records[i].tensor_size, alignment);
    const std::optional<uint64_t> sum =
        end ? CheckedAdd(bound, *end) : std::nullopt;
    if (!sum) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "record %d: the sum of aligned sizes and pinned ends overflows 64 "
          "bits",
          i));
    }
    bound = *sum;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BestFitResult> BestFitMulti(
    const std::vector<UsageRecord<>>& records, uint64_t alignment,
    const PinnedOffsets& pinned) {
  if (absl::Status fits = CheckPlacementFits(records, alignment, pinned);
      !fits.ok()) {
    return fits;
  }
  const std::vector<PlacementVariant> variants = BestFitVariants();
  // The variants are independent: run them on the available cores.
  std::vector<OffsetsAssignment> plans(variants.size());
  std::atomic<size_t> next_variant = 0;
  auto work = [&] {
    for (size_t v = next_variant++; v < variants.size(); v = next_variant++) {
      plans[v] = PlaceInOrder(records, variants[v].order, variants[v].rule,
                              alignment, pinned);
    }
  };
  // Below a few thousand tensors a run takes milliseconds: not worth a thread.
  constexpr size_t kTensorsPerThread = 4096;
  const size_t num_threads =
      records.size() < kTensorsPerThread
          ? 1
          : std::min<size_t>(variants.size(),
                             std::max(1u, std::thread::hardware_concurrency()));
  {
    std::vector<std::jthread> threads;
    for (size_t t = 1; t < num_threads; ++t) threads.emplace_back(work);
    work();
  }
  BestFitResult best;
  for (size_t v = 0; v < variants.size(); ++v) {
    if (best.variant.empty() || plans[v].total_size < best.offsets.total_size) {
      best.offsets = std::move(plans[v]);
      best.variant = variants[v].name;
    }
  }
  return best;
}

std::vector<PlacementVariant> BestFitVariants() {
  return {
      {PlacementOrder::kSize, GapRule::kBestFit, "size/best_fit"},
      {PlacementOrder::kSizeThenDuration, GapRule::kBestFit,
       "size_then_duration/best_fit"},
      {PlacementOrder::kDurationThenSize, GapRule::kBestFit,
       "duration_then_size/best_fit"},
      {PlacementOrder::kSizeThenDuration, GapRule::kFirstFit,
       "size_then_duration/first_fit"},
      {PlacementOrder::kDurationThenSize, GapRule::kFirstFit,
       "duration_then_size/first_fit"},
      {PlacementOrder::kArea, GapRule::kFirstFit, "area/first_fit"},
  };
}

}  // namespace tensormem
