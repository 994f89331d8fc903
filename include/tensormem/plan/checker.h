// Validity checks for static plans: proof that a placement can be used.
//
// CheckPlacement verifies an offsets plan on a BufferSet: every buffer has an
// offset, offsets are multiples of `alignment`, offset + size does not
// overflow, and no two buffers live at the same time share a byte. It runs in
// O(n log n) (a sweep over time with an ordered set of live address ranges),
// so it can check plans of 10^5 buffers in milliseconds.
//
//   BufferSet placed = ...;  // every buffer's `offset` set by a planner
//   absl::Status valid = CheckPlacement(placed, /*alignment=*/64);
//   // !valid.ok(): the message names the two conflicting buffer ids, their
//   // lifetimes and their address ranges.
//
// CheckObjects verifies a shared-objects plan on usage records: every tensor
// has an object that exists and is large enough, and no two tensors of one
// object live at the same time.
#ifndef TENSORMEM_PLAN_CHECKER_H_
#define TENSORMEM_PLAN_CHECKER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/usage_record.h"

namespace tensormem {

// OK iff `placed` is a valid placement with offsets aligned to `alignment`
// (> 0). Zero-size buffers occupy no bytes and only need an aligned offset.
// An error reports the first problem found (InvalidArgument).
absl::Status CheckPlacement(const BufferSet& placed, uint64_t alignment = 1);

// OK iff `objects` is a valid shared-objects plan for `records`.
absl::Status CheckObjects(const std::vector<UsageRecord<>>& records,
                          const ObjectsAssignment<>& objects);

// OK iff `offsets` (one per record, with its total size) is a valid placement
// of `records` aligned to `alignment`, and every tensor ends within the total.
absl::Status CheckOffsets(const std::vector<UsageRecord<>>& records,
                          const OffsetsAssignment& offsets,
                          uint64_t alignment = 1);

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_CHECKER_H_
