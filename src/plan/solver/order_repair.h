// RepairWindowedOrder: lowers a windowed order's plan by changing the order
// where the plan is too high, and placing the whole set again.
//
// A windowed order's plan (windowed_orders.h) reaches its total at one
// buffer, on training graphs usually a short-lived one at the peak of live
// bytes that came late in its window and found no gap left: the buffers
// placed before it had cut its range into pieces. The repair moves that
// buffer in the visiting order and re-places every buffer greedily:
//   - *promote*: the top buffer goes to the front of its window (when it is
//     there already, to the front of the window visited before), so it is
//     placed before the buffers that took its range;
//   - *demote*: the buffers it rests on (live with it, ending where it
//     starts, placed before it) go to just after it, so they look for room
//     elsewhere and leave its range to it.
// It goes on from each new plan while one of `patience` steps improves on
// the best; otherwise it returns to the best plan and tries the next move on
// the buffer at its top (demote, then promote one window further, and so
// on). On IOPDDL S_1 the backward first-fit orders go from 1.0025x to
// 1.0002x the peak of live bytes in about ten placements (0.08 s each).
//
//   std::optional<RepairedPlan> plan =
//       RepairWindowedOrder(records, order, 1, peak, stop);
#ifndef TENSORMEM_PLAN_SOLVER_ORDER_REPAIR_H_
#define TENSORMEM_PLAN_SOLVER_ORDER_REPAIR_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "plan/solver/windowed_orders.h"
#include "tensormem/plan/usage_record.h"

namespace tensormem::solver_internal {

struct RepairedPlan {
  uint64_t total = 0;             // max over buffers of offset + size
  std::vector<uint64_t> offsets;  // one per record
  std::chrono::steady_clock::time_point found_at;  // when it was placed
  bool repaired = false;  // not the order's own plan but a repaired one
};

struct RepairLimits {
  // Steps without a better plan before returning to the best one.
  int patience = 3;
  // Returns to the best plan in a row without a better plan before giving
  // up on the order.
  int fruitless_returns = 2;
  // Placements after the order's own plan, at most (0: that plan alone).
  int steps = 1 << 30;
};

// Moves `tensor` in `visit` to the front of its run of buffers of one window
// (windows as `order` ranks them), and `extra` runs further ahead; a tensor
// already at the front of its run goes one run further ahead. It never goes
// ahead of position `first` (the records kept in place lead the order).
void PromoteInVisitOrder(const std::vector<UsageRecord<>>& records,
                         const WindowedOrder& order, size_t tensor, int extra,
                         std::vector<size_t>& visit, size_t first = 0);

// Moves the buffers `tensor` rests on in the plan `offsets` (live with it,
// ending at its offset) that come before it in `visit` to just after it, in
// their order. Returns how many moved. Records with a non-zero entry in
// `fixed` (empty, or one entry per record) stay where they are.
size_t DemoteSupports(const std::vector<UsageRecord<>>& records,
                      const std::vector<uint64_t>& offsets, size_t tensor,
                      std::vector<size_t>& visit,
                      std::span<const uint8_t> fixed = {});

// Records that keep their offsets whatever the order: those with a non-zero
// entry in `fixed` (empty for none) stay at (*offsets)[i].
struct KeptOffsets {
  const std::vector<uint64_t>* offsets = nullptr;
  std::span<const uint8_t> fixed = {};
};

// Starts from `order`'s own plan and repairs it as above until a plan
// reaches `stop_at` (a proven bound, or a total
// that is enough), the limits give up, or `stop` says so. Returns the
// best plan placed (the order's own plan if nothing beat it), or nothing if
// told to stop before the first placement was done.
std::optional<RepairedPlan> RepairWindowedOrder(
    const std::vector<UsageRecord<>>& records, const WindowedOrder& order,
    uint64_t alignment, uint64_t stop_at, const StopWhen& stop,
    const RepairLimits& limits = {}, const KeptOffsets& kept = {});

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_ORDER_REPAIR_H_
