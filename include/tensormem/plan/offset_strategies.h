// Offset strategies: every tensor gets a byte offset in one arena, and
// tensors live at the same time must not overlap.
//
//   TM_ASSIGN_OR_RETURN(OffsetsAssignment plan,
//                       GreedyBySizeOffsets(records, 64));
//   TM_ASSIGN_OR_RETURN(BestFitResult best, BestFitMulti(records, 64));
//
// GreedyBySizeOffsets is TFLite's offset planner, exact (O(n^2)). The best-fit
// family goes beyond TFLite, in the spirit of XLA's heap simulator: tensors in
// a chosen order each take the tightest free gap (best fit) or the lowest one
// (first fit) among the tensors already placed that overlap it in time. An
// interval index finds those tensors, so a placement costs O(log n + k log k)
// for k overlapping tensors instead of a scan of all tensors.
#ifndef TENSORMEM_PLAN_OFFSET_STRATEGIES_H_
#define TENSORMEM_PLAN_OFFSET_STRATEGIES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/plan/usage_record.h"

namespace tensormem {

// Lays objects back to back in id order: object k starts after objects 0..k-1,
// each rounded up to `alignment` (with 1, TFLite's ObjectsToOffsets exactly:
// total = sum of sizes). Fails if an object id is out of range or the sum
// overflows.
absl::StatusOr<OffsetsAssignment> ObjectsToOffsets(
    const ObjectsAssignment<>& objects, uint64_t alignment = 1);

// TFLite's GREEDY_BY_SIZE offsets: largest tensor first (stable), each into
// the smallest gap between overlapping tensors that fits, else after the
// right-most one with its end rounded up to `base_addr_align_bytes`.
absl::StatusOr<OffsetsAssignment> GreedyBySizeOffsets(
    const std::vector<UsageRecord<>>& records,
    uint64_t base_addr_align_bytes = 1);

// The order in which a placement run visits tensors (ties: record order).
enum class PlacementOrder {
  kSize,              // size descending (TFLite's GREEDY_BY_SIZE order)
  kSizeThenDuration,  // size descending, then lifetime descending
  kDurationThenSize,  // lifetime descending, then size descending
  kArea,              // size x lifetime descending
};

// Which free gap a tensor takes.
enum class GapRule {
  kBestFit,   // the smallest gap that fits (lowest offset on ties)
  kFirstFit,  // the lowest gap that fits
};

// Offsets some tensors must keep (blocks already in memory): one entry per
// tensor, or empty for none. Pinned tensors are placed first, where they are;
// they must not overlap each other (CheckOffsets finds it if they do).
using PinnedOffsets = std::vector<std::optional<uint64_t>>;

// One run: tensors in `order`, each into a gap chosen by `rule` around the
// pinned ones, offsets multiples of `alignment`. Zero-size tensors go to
// offset 0.
OffsetsAssignment PlaceInOrder(const std::vector<UsageRecord<>>& records,
                               PlacementOrder order, GapRule rule,
                               uint64_t alignment = 1,
                               const PinnedOffsets& pinned = {});

struct PlacementVariant {
  PlacementOrder order;
  GapRule rule;
  const char* name;  // e.g. "size_then_duration/best_fit"
};

// The variants BestFitMulti tries, in tie-break order: best fit by size (the
// TFLite order), size then lifetime and lifetime then size; first fit by size
// then lifetime, lifetime then size, and area. First fit often wins on sets
// with long-lived buffers.
std::vector<PlacementVariant> BestFitVariants();

struct BestFitResult {
  OffsetsAssignment offsets;
  std::string variant;  // the winning PlacementVariant's name
};

// Runs every variant of BestFitVariants() (in parallel on the available
// cores) and keeps the smallest total; the first listed wins ties.
// `alignment` must be positive; `pinned` is empty or has an entry per record.
absl::StatusOr<BestFitResult> BestFitMulti(
    const std::vector<UsageRecord<>>& records, uint64_t alignment = 1,
    const PinnedOffsets& pinned = {});

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_OFFSET_STRATEGIES_H_
