#include "plan/solver/windowed_orders.h"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "plan/occupancy_index.h"
#include "plan/solver/local_moves.h"

namespace tensormem::solver_internal {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

bool StopWhen::Now() const {
  return (cancel != nullptr && cancel->load()) || Clock::now() >= deadline;
}

std::vector<WindowedOrder> WindowedOrderFamily(uint64_t span) {
  std::vector<WindowedOrder> family;
  // Middle widths first. On S_1 the best member of every width ends within
  // 0.03% of the best one (span/8, backwards, best fit), but members of one
  // width range from 1.0013x to 1.05x: the rules and directions all run.
  for (const uint64_t windows : {16, 8, 32, 4, 64, 128}) {
    const uint64_t width = std::max<uint64_t>(1, span / windows);
    for (const uint64_t phase : {uint64_t{0}, width / 2}) {
      for (const bool backwards : {false, true}) {
        for (const bool first_fit : {true, false}) {
          family.push_back({.width = width,
                            .phase = phase,
                            .backwards = backwards,
                            .first_fit = first_fit});
        }
      }
    }
  }
  return family;
}

std::vector<size_t> WindowedVisitOrder(
    const std::vector<UsageRecord<>>& records, const WindowedOrder& order) {
  // Key: (window in visiting order, longer lifetime first, larger first).
  auto key = [&](size_t i) {
    const UsageRecord<>& r = records[i];
    const TaskId task = order.backwards ? r.last_task : r.first_task;
    const uint64_t window = (task + order.phase) / order.width;
    const uint64_t duration = r.last_task - r.first_task;
    return std::make_tuple(order.backwards ? ~window : window, ~duration,
                           ~r.tensor_size);
  };
  std::vector<size_t> visit(records.size());
  std::iota(visit.begin(), visit.end(), 0);
  std::stable_sort(visit.begin(), visit.end(),
                   [&](size_t a, size_t b) { return key(a) < key(b); });
  return visit;
}

std::optional<std::vector<uint64_t>> PlaceInVisitOrder(
    const std::vector<UsageRecord<>>& records, const std::vector<size_t>& visit,
    bool first_fit, uint64_t alignment, const StopWhen& stop) {
  std::vector<uint64_t> offsets(records.size(), 0);
  internal::OccupancyIndex index(records);
  std::vector<const internal::RangeUnion*> occupied;
  for (size_t placed = 0; placed < visit.size(); ++placed) {
    // A run on 10^5 buffers takes about a second: look at the clock.
    if (placed % 1024 == 0 && stop.Now()) return std::nullopt;
    const size_t tensor = visit[placed];
    if (records[tensor].tensor_size == 0) continue;  // offset 0
    index.Occupied(tensor, occupied);
    offsets[tensor] = internal::FindGap(occupied, records[tensor].tensor_size,
                                        first_fit, alignment);
    index.Place(tensor, offsets[tensor]);
  }
  return offsets;
}

uint64_t ImproveByWindowedOrders(const std::vector<UsageRecord<>>& records,
                                 uint64_t alignment,
                                 std::vector<uint64_t>& offsets,
                                 uint64_t lower_bound, const StopWhen& stop,
                                 Clock::time_point* improved_at) {
  uint64_t best = TotalSize(records, offsets);
  if (records.empty()) return best;
  TaskId first = records[0].first_task;
  TaskId last = records[0].last_task;
  for (const UsageRecord<>& r : records) {
    first = std::min(first, r.first_task);
    last = std::max(last, r.last_task);
  }
  for (const WindowedOrder& order : WindowedOrderFamily(last - first + 1)) {
    std::optional<std::vector<uint64_t>> plan =
        PlaceInVisitOrder(records, WindowedVisitOrder(records, order),
                          order.first_fit, alignment, stop);
    if (!plan) break;
    const uint64_t total = TotalSize(records, *plan);
    if (total < best) {
      best = total;
      offsets = std::move(*plan);
      if (improved_at != nullptr) *improved_at = Clock::now();
    }
    if (best <= lower_bound) break;  // nothing smaller exists
  }
  return best;
}

}  // namespace tensormem::solver_internal
