#include "plan/solver/order_repair.h"

#include <algorithm>
#include <utility>

#include "plan/solver/local_moves.h"
#include "plan/solver/solver_clock.h"

namespace tensormem::solver_internal {
namespace {

// The first buffer (by index) that ends at the plan's total.
size_t TopBuffer(const std::vector<UsageRecord<>>& records,
                 const RepairedPlan& plan) {
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].tensor_size > 0 &&
        plan.offsets[i] + records[i].tensor_size == plan.total)
      return i;
  }
  return 0;
}

// Where the run of buffers of one window that holds position `end - 1`
// begins.
size_t RunStart(const std::vector<UsageRecord<>>& records,
                const WindowedOrder& order, const std::vector<size_t>& visit,
                size_t end) {
  const uint64_t rank = WindowRank(records[visit[end - 1]], order);
  size_t start = end - 1;
  while (start > 0 && WindowRank(records[visit[start - 1]], order) == rank)
    --start;
  return start;
}

// Places the set in `visit` order; `previous` was placed in `previous_visit`,
// so the buffers before the first position where the orders differ keep
// its offsets.
std::optional<RepairedPlan> Place(const std::vector<UsageRecord<>>& records,
                                  const std::vector<size_t>& visit,
                                  const WindowedOrder& order,
                                  uint64_t alignment, const StopWhen& stop,
                                  const std::vector<size_t>& previous_visit,
                                  const RepairedPlan& previous) {
  const size_t same =
      std::mismatch(visit.begin(), visit.end(), previous_visit.begin(),
                    previous_visit.end())
          .first -
      visit.begin();
  std::optional<std::vector<uint64_t>> offsets =
      PlaceInVisitOrder(records, visit, order.first_fit, alignment, stop,
                        {.offsets = &previous.offsets, .length = same});
  if (!offsets) return std::nullopt;
  const uint64_t total = TotalSize(records, *offsets);
  return RepairedPlan{.total = total,
                      .offsets = std::move(*offsets),
                      .found_at = SolverClock::Now()};
}

}  // namespace

void PromoteInVisitOrder(const std::vector<UsageRecord<>>& records,
                         const WindowedOrder& order, size_t tensor, int extra,
                         std::vector<size_t>& visit, size_t first) {
  const size_t position =
      std::find(visit.begin(), visit.end(), tensor) - visit.begin();
  if (position == visit.size() || position <= first) return;
  size_t target = RunStart(records, order, visit, position + 1);
  if (target == position) ++extra;
  for (int run = 0; run < extra && target > first; ++run)
    target = RunStart(records, order, visit, target);
  target = std::max(target, first);
  std::rotate(visit.begin() + target, visit.begin() + position,
              visit.begin() + position + 1);
}

size_t DemoteSupports(const std::vector<UsageRecord<>>& records,
                      const std::vector<uint64_t>& offsets, size_t tensor,
                      std::vector<size_t>& visit,
                      std::span<const uint8_t> fixed) {
  const UsageRecord<>& top = records[tensor];
  auto supports = [&](size_t i) {
    return i != tensor && records[i].tensor_size > 0 &&
           (fixed.empty() || fixed[i] == 0) &&
           offsets[i] + records[i].tensor_size == offsets[tensor] &&
           records[i].LiveAtSameTime(top);
  };
  std::vector<size_t> reordered;
  std::vector<size_t> demoted;
  reordered.reserve(visit.size());
  bool after = false;
  for (const size_t i : visit) {
    if (!after && supports(i)) {
      demoted.push_back(i);
      continue;
    }
    reordered.push_back(i);
    if (i == tensor) {
      after = true;
      reordered.insert(reordered.end(), demoted.begin(), demoted.end());
    }
  }
  if (!after) return 0;  // `tensor` is not in `visit`: leave it as it was
  visit = std::move(reordered);
  return demoted.size();
}

namespace {

size_t CountKept(const KeptOffsets& kept) {
  return std::count_if(kept.fixed.begin(), kept.fixed.end(),
                       [](uint8_t f) { return f != 0; });
}

// The order's own plan. The `leading` kept records lead `visit`: placed as
// a prefix already known, they keep their offsets.
std::optional<RepairedPlan> PlaceFirst(
    const std::vector<UsageRecord<>>& records, const std::vector<size_t>& visit,
    const WindowedOrder& order, uint64_t alignment, const StopWhen& stop,
    const KeptOffsets& kept, size_t leading) {
  if (leading == 0)
    return Place(records, visit, order, alignment, stop, {}, {});
  const std::vector<size_t> kept_visit(visit.begin(), visit.begin() + leading);
  return Place(records, visit, order, alignment, stop, kept_visit,
               {.offsets = *kept.offsets, .found_at = {}});
}

}  // namespace

std::optional<RepairedPlan> RepairWindowedOrder(
    const std::vector<UsageRecord<>>& records, const WindowedOrder& order,
    uint64_t alignment, uint64_t stop_at, const StopWhen& stop,
    const RepairLimits& limits, const KeptOffsets& kept) {
  std::vector<size_t> visit = WindowedVisitOrder(records, order, kept.fixed);
  const size_t leading = CountKept(kept);
  std::optional<RepairedPlan> best =
      PlaceFirst(records, visit, order, alignment, stop, kept, leading);
  if (!best || records.empty()) return best;
  std::vector<size_t> best_visit = visit;
  RepairedPlan current = *best;
  // Moves tried on a best plan whose top was this buffer: even counts
  // promote (count / 2 runs further ahead), odd counts demote its supports.
  std::vector<int> tries(records.size(), 0);
  int steps_without_gain = 0;
  int fruitless_returns = 0;
  for (int step = 0; step < limits.steps && best->total > stop_at &&
                     fruitless_returns <= limits.fruitless_returns;
       ++step) {
    const size_t top = TopBuffer(records, current);
    // A kept record at the top: no order places it lower.
    if (!kept.fixed.empty() && kept.fixed[top] != 0) break;
    const std::vector<size_t> placed_visit = visit;
    if (tries[top] % 2 == 1) {
      DemoteSupports(records, current.offsets, top, visit, kept.fixed);
    } else {
      PromoteInVisitOrder(records, order, top, tries[top] / 2, visit, leading);
    }
    std::optional<RepairedPlan> next =
        Place(records, visit, order, alignment, stop, placed_visit, current);
    if (!next) break;
    current = std::move(*next);
    if (current.total < best->total) {
      best = current;
      best->repaired = true;
      best_visit = visit;
      steps_without_gain = 0;
      fruitless_returns = 0;
    } else if (++steps_without_gain >= limits.patience) {
      visit = best_visit;
      current = *best;
      ++tries[TopBuffer(records, current)];
      steps_without_gain = 0;
      ++fruitless_returns;
    }
  }
  return best;
}

}  // namespace tensormem::solver_internal
