#include "plan/solver/windowed_orders.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <numeric>
#include <thread>
#include <tuple>
#include <utility>

#include "plan/occupancy_index.h"
#include "plan/solver/local_moves.h"
#include "plan/solver/order_repair.h"
#include "plan/solver/solver_clock.h"

namespace tensormem::solver_internal {
namespace {

using Clock = std::chrono::steady_clock;

// The smallest plan any thread found. Ties go to the lower rank (the
// member's position in the run order), so the plan kept does not depend on
// which thread finished first.
class SharedBest {
 public:
  SharedBest(std::vector<uint64_t>& offsets, uint64_t total)
      : offsets_(offsets), total_(total) {}

  void Offer(uint64_t total, std::vector<uint64_t>&& offsets, size_t rank,
             Clock::time_point found_at, bool repaired) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const bool tie_lost = rank >= rank_ || rank_ == kStart;
    if (total > total_ || (total == total_ && tie_lost)) return;
    total_ = total;
    rank_ = rank;
    offsets_ = std::move(offsets);
    outcome_.improved_at = found_at;
    outcome_.repaired = repaired;
  }
  uint64_t Total() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return total_;
  }
  WindowedOrdersOutcome Outcome() {
    const std::lock_guard<std::mutex> lock(mutex_);
    WindowedOrdersOutcome outcome = outcome_;
    outcome.total = total_;
    return outcome;
  }

 private:
  std::mutex mutex_;
  std::vector<uint64_t>& offsets_;
  uint64_t total_;
  static constexpr size_t kStart = ~size_t{0};  // the start wins every tie
  size_t rank_ = kStart;
  WindowedOrdersOutcome outcome_;
};

// Calls `work(i)` for i in [0, count) on `threads` threads (the caller's
// among them), each taking the next i, until all are taken or `done()`.
template <typename Done, typename Work>
void RunInParallel(int threads, size_t count, const Done& done,
                   const Work& work) {
  std::atomic<size_t> next = 0;
  auto run = [&] {
    for (size_t i = next++; i < count && !done(); i = next++) work(i);
  };
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads && static_cast<size_t>(t) < count; ++t)
    helpers.emplace_back(WithTheCallersClock(std::ref(run)));
  run();
  for (std::thread& helper : helpers) helper.join();
}

// The family's members in the order they are run: four groups, first fit
// before best fit (a first-fit placement costs a third of a best-fit one),
// backwards before forwards, each group in family order (middle widths
// first). On IOPDDL S_1 the repairs of backward first-fit members of widths
// span/16 and span/8 reach 1.0002x the bound; those of the forward ones end
// at 1.0013-1.0018x, those of best-fit ones no better than their own plans.
// Not by the plans' totals: the backward first-fit plans all end at
// 1.0025-1.0030x (a few at 1.04x), and the span/4 ones, among the
// smallest, are not repaired below 1.0025x.
std::vector<size_t> RunOrder(const std::vector<WindowedOrder>& family) {
  std::vector<size_t> members;
  for (const auto& [first_fit, backwards] :
       {std::pair{true, true}, {true, false}, {false, true}, {false, false}}) {
    for (size_t member = 0; member < family.size(); ++member) {
      if (family[member].first_fit == first_fit &&
          family[member].backwards == backwards)
        members.push_back(member);
    }
  }
  return members;
}

// Counted time (solver_clock.h): a placement's work grows with the taken
// ranges its gap search merges, a step per 32 of them (each a few
// nanoseconds) beside the step of updating the index.
uint64_t PlacementSteps(const std::vector<const internal::RangeUnion*>& lists) {
  size_t ranges = 0;
  for (const internal::RangeUnion* list : lists)
    ranges += list->ranges().size();
  return 1 + ranges / 64;
}

}  // namespace

bool StopWhen::Now() const {
  return (cancel != nullptr && cancel->load()) ||
         (enough != nullptr && enough->load()) ||
         SolverClock::Now() >= deadline;
}

uint64_t TaskSpan(const std::vector<UsageRecord<>>& records) {
  if (records.empty()) return 0;
  TaskId first = records[0].first_task;
  TaskId last = records[0].last_task;
  for (const UsageRecord<>& r : records) {
    first = std::min(first, r.first_task);
    last = std::max(last, r.last_task);
  }
  return last - first + 1;
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

uint64_t WindowRank(const UsageRecord<>& record, const WindowedOrder& order) {
  const TaskId task = order.backwards ? record.last_task : record.first_task;
  const uint64_t window = (task + order.phase) / order.width;
  return order.backwards ? ~window : window;
}

std::vector<size_t> WindowedVisitOrder(
    const std::vector<UsageRecord<>>& records, const WindowedOrder& order,
    std::span<const uint8_t> fixed) {
  // Key: (fixed first, window in visiting order, longer lifetime first,
  // larger first).
  auto key = [&](size_t i) {
    const UsageRecord<>& r = records[i];
    if (!fixed.empty() && fixed[i] != 0)
      return std::make_tuple(false, uint64_t{0}, uint64_t{0}, uint64_t{0});
    const uint64_t duration = r.last_task - r.first_task;
    return std::make_tuple(true, WindowRank(r, order), ~duration,
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
    bool first_fit, uint64_t alignment, const StopWhen& stop,
    const PlacedPrefix& known) {
  std::vector<uint64_t> offsets(records.size(), 0);
  internal::OccupancyIndex index(records);
  std::vector<const internal::RangeUnion*> occupied;
  for (size_t placed = 0; placed < visit.size(); ++placed) {
    // A run on 10^5 buffers takes about a second: look at the clock.
    if (placed % 1024 == 0 && stop.Now()) return std::nullopt;
    const size_t tensor = visit[placed];
    if (records[tensor].tensor_size == 0) continue;  // offset 0
    if (placed < known.length) {
      SolverClock::Count();
      offsets[tensor] = (*known.offsets)[tensor];
    } else {
      index.Occupied(tensor, occupied);
      SolverClock::Count(PlacementSteps(occupied));
      offsets[tensor] = internal::FindGap(occupied, records[tensor].tensor_size,
                                          first_fit, alignment);
    }
    index.Place(tensor, offsets[tensor]);
  }
  return offsets;
}

WindowedOrdersOutcome ImproveByWindowedOrders(
    const std::vector<UsageRecord<>>& records, uint64_t alignment,
    std::vector<uint64_t>& offsets, const StopWhen& stop,
    const WindowedOrdersOptions& options) {
  const std::vector<uint64_t> offsets_at_start = offsets;
  SharedBest best(offsets, TotalSize(records, offsets));
  if (records.empty()) return best.Outcome();
  const std::vector<WindowedOrder> family =
      WindowedOrderFamily(TaskSpan(records));
  // A plan within `stop_at` also stops the members other threads run.
  std::atomic<bool> enough = best.Total() <= options.stop_at;
  const StopWhen stop_all = {
      .deadline = stop.deadline, .cancel = stop.cancel, .enough = &enough};
  auto done = [&] { return stop_all.Now(); };
  // Each member is placed, then repaired, before the next is taken: the
  // repair starts from the member's own plan, and the first members' repairs
  // are the ones that count on S_1.
  const std::vector<size_t> members = RunOrder(family);
  RunInParallel(options.threads, members.size(), done, [&](size_t k) {
    const WindowedOrder& order = family[members[k]];
    std::optional<RepairedPlan> plan = RepairWindowedOrder(
        records, order, alignment, options.stop_at, stop_all,
        options.repair ? RepairLimits{} : RepairLimits{.steps = 0},
        {.offsets = &offsets_at_start, .fixed = options.fixed});
    if (!plan) return;
    if (plan->total <= options.stop_at) enough = true;
    best.Offer(plan->total, std::move(plan->offsets), k, plan->found_at,
               plan->repaired);
  });
  return best.Outcome();
}

}  // namespace tensormem::solver_internal
