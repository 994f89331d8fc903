// ImproveByWindowedOrders: re-places a large set greedily under a family of
// time-windowed buffer orders and keeps the smallest plan.
//
// The best-fit planners visit buffers by size or by lifetime over the whole
// set. On training graphs (activations kept from the forward pass to the
// backward pass) that stacks long-lived buffers on top of the short large
// ones that came first, far above the peak of live bytes. Cutting time into
// windows and visiting the windows in time order (or in reverse), and each
// window's buffers longest-lived first, builds the plan the way memory fills
// over time while still seating long-lived buffers before the short ones
// around them. The family varies the window width (the set's time span over
// 4 to 128), the windows' phase, the direction of time and the gap rule
// (best fit or first fit); on IOPDDL S_1 its members end 1.0013-1.0018x the
// bound against 1.0249x for the best-fit planners. The members' orders are
// then repaired where their plans reach the top (order_repair.h).
//
//   WindowedOrdersOutcome outcome = ImproveByWindowedOrders(
//       records, 1, offsets, {.deadline = deadline},
//       {.stop_at = peak, .threads = 2});
#ifndef TENSORMEM_PLAN_SOLVER_WINDOWED_ORDERS_H_
#define TENSORMEM_PLAN_SOLVER_WINDOWED_ORDERS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tensormem/plan/usage_record.h"

namespace tensormem::solver_internal {

// One member of the family.
struct WindowedOrder {
  uint64_t width = 1;      // tasks per window (>= 1)
  uint64_t phase = 0;      // windows start at tasks == phase (mod width)
  bool backwards = false;  // windows by last task, the latest first
  bool first_fit = false;  // lowest gap instead of the tightest
};

// The tasks from the earliest first task to the latest last task of
// `records`, both counted (0 for none): the `span` of WindowedOrderFamily.
uint64_t TaskSpan(const std::vector<UsageRecord<>>& records);

// The members tried, most promising first, for records spanning `span` tasks.
std::vector<WindowedOrder> WindowedOrderFamily(uint64_t span);

// The visiting order of `order` over `records` (indices). Records with a
// non-zero entry in `fixed` (empty, or one entry per record) come first, in
// index order: they keep offsets given beforehand.
std::vector<size_t> WindowedVisitOrder(
    const std::vector<UsageRecord<>>& records, const WindowedOrder& order,
    std::span<const uint8_t> fixed = {});

// When to give up: at `deadline`, or as soon as `*cancel` (if given) is set.
struct StopWhen {
  std::chrono::steady_clock::time_point deadline;
  const std::atomic<bool>* cancel = nullptr;
  // Set when another thread's plan is good enough (null: no such thread).
  const std::atomic<bool>* enough = nullptr;
  bool Now() const;
};

// The first `length` buffers of a visiting order and where an earlier
// placement in that same order put them (`offsets`, one per record).
struct PlacedPrefix {
  const std::vector<uint64_t>* offsets = nullptr;
  size_t length = 0;
};

// Places the records greedily in `visit` order, each into the tightest (or
// lowest, with `first_fit`) aligned gap among the placed buffers live with
// it. The buffers of `known` keep their offsets without a search (placing
// them again would give the same ones). Returns the offsets, or nothing
// when told to stop first.
std::optional<std::vector<uint64_t>> PlaceInVisitOrder(
    const std::vector<UsageRecord<>>& records, const std::vector<size_t>& visit,
    bool first_fit, uint64_t alignment, const StopWhen& stop,
    const PlacedPrefix& known = {});

// The window of `record` under `order`, as its rank in visiting order: the
// buffers of one window share it, and smaller ranks are visited first.
uint64_t WindowRank(const UsageRecord<>& record, const WindowedOrder& order);

struct WindowedOrdersOptions {
  // Stop once a plan's total is at most this: a proven lower bound (e.g.
  // the peak of live bytes), or a capacity that is enough.
  uint64_t stop_at = 0;
  // Threads placing and repairing members side by side (>= 1).
  int threads = 1;
  // Repair each member's order (order_repair.h) after placing it.
  bool repair = true;
  // Records with a non-zero entry (empty, or one entry per record) keep the
  // offsets they have at the start: every order visits them first, and no
  // repair moves them.
  std::span<const uint8_t> fixed = {};
};

struct WindowedOrdersOutcome {
  uint64_t total = 0;  // of the offsets returned (never above the start's)
  // When the returned plan was found; unset if the start was kept.
  std::optional<std::chrono::steady_clock::time_point> improved_at;
  bool repaired = false;  // the returned plan came from a repaired order
};

// Runs the family's members, each placed and then repaired, until done,
// told to stop, or down to `options.stop_at`; replaces `offsets` (one per
// record, aligned, valid) by any plan with a smaller total. With several
// threads the plan returned is the same as with one whenever every member
// runs to its end (ties go to the member run first).
WindowedOrdersOutcome ImproveByWindowedOrders(
    const std::vector<UsageRecord<>>& records, uint64_t alignment,
    std::vector<uint64_t>& offsets, const StopWhen& stop,
    const WindowedOrdersOptions& options = {});

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_WINDOWED_ORDERS_H_
