// RunFeasibility: one feasibility question ("does the problem fit in C?")
// answered by restarts over several orders, spread over threads; and
// RestartSchedule, which decides the orders and their node budgets.
//
// Runs are taken from one queue by every thread, so no thread idles while
// another still searches; the first run to find a placement or to exhaust
// its tree (a proof that none exists, valid whatever the order) stops the
// others.
//
// The base orders' searches can be kept (KeptSearches) from one question to
// the next at the same capacity: each round then extends them instead of
// restarting them from the root.
//
//   RestartSchedule schedule(problem.buffers.size());
//   KeptSearches kept(problem);
//   FeasibilityRequest request{.capacity = 1 << 20,
//                              .runs = schedule.Runs(50000, true),
//                              .threads = 2, .kept = &kept};
//   FeasibilityAnswer answer = RunFeasibility(problem, request);
//   schedule.Record(request.runs, answer);
#ifndef TENSORMEM_PLAN_SOLVER_PARALLEL_SEARCH_H_
#define TENSORMEM_PLAN_SOLVER_PARALLEL_SEARCH_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "plan/solver/feasibility_search.h"
#include "plan/solver/problem.h"
#include "plan/solver/static_orders.h"
#include "plan/solver/suspended_search.h"

namespace tensormem::solver_internal {

struct OrderRun {
  int order = 0;  // StaticOrderRanks index
  uint64_t node_limit = UINT64_MAX;
  // Extend the kept search of this (base) order by node_limit nodes; without
  // kept searches in the request, a fresh run.
  bool resume = false;
};

// The base orders' searches at one capacity, paused between questions.
class KeptSearches {
 public:
  explicit KeptSearches(const Problem& problem) : problem_(problem) {}
  // Drops the searches unless they are for `capacity`; clears the stop flag.
  void Prepare(uint64_t capacity,
               std::chrono::steady_clock::time_point deadline,
               const std::atomic<bool>* cancel);
  // The search of `order` at the prepared capacity (made on first use).
  SuspendedSearch& For(int order);
  std::atomic<bool>& stop() { return stop_; }

 private:
  const Problem& problem_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;  // guards searches_
  uint64_t capacity_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  const std::atomic<bool>* cancel_ = nullptr;
  std::vector<std::unique_ptr<SuspendedSearch>> searches_;
};

struct FeasibilityRequest {
  uint64_t capacity = 0;
  std::vector<OrderRun> runs;  // taken in this order
  int threads = 1;
  std::chrono::steady_clock::time_point deadline =
      std::chrono::steady_clock::time_point::max();
  KeptSearches* kept = nullptr;               // for runs with `resume`
  const std::atomic<bool>* cancel = nullptr;  // the caller gives up
};

struct FeasibilityAnswer {
  SearchOutcome outcome = SearchOutcome::kStopped;
  std::vector<uint64_t> offsets;  // per problem buffer, when kFound
  uint64_t nodes = 0;             // over all runs and threads
  std::vector<int> deepest;       // per run: most buffers placed (-1: not run)
};

FeasibilityAnswer RunFeasibility(const Problem& problem,
                                 const FeasibilityRequest& request);

// The runs of successive feasibility questions. Each gets every base order
// at the caller's node limit, the one that placed the most buffers so far at
// twice that when it leads every other by a tenth of the buffers (it is the
// likeliest to finish), interleaved with
// short restarts on perturbed orders of Luby lengths (1, 1, 2, 1, 1, 2, 4,
// ... units) that take half as many nodes: on tight sets a wrong choice low
// in the tree is often only found deep in it, and many short runs from
// different orders escape that where a few long ones do not. With `resume`,
// base orders extend their kept searches in four slices each, round robin,
// so an order that needs N nodes gets them after about N of every other's.
class RestartSchedule {
 public:
  static constexpr int kSlices = 4;
  // Restarts take this many percent of the base orders' nodes.
  static constexpr uint64_t kRestartPercent = 25;
  // The leader must be ahead by this many percent of the buffers.
  static constexpr int64_t kLeaderMarginPercent = 10;
  // The node limit of a minimisation's first round for a set of `buffers`:
  // 8 per buffer (at least 2,000), so a base order's slice holds a descent
  // through every buffer with room to backtrack. At 4 per buffer a slice was
  // one descent exactly, and an order a few buffers short of a plan waited,
  // paused, through every other order's slice and a restart.
  static uint64_t FirstNodeLimit(size_t buffers);
  explicit RestartSchedule(size_t buffers);
  std::vector<OrderRun> Runs(uint64_t node_limit, bool resume);
  // Learns from the base orders' runs which one progresses best.
  void Record(const std::vector<OrderRun>& runs,
              const FeasibilityAnswer& answer);

 private:
  // The base order that gets twice the nodes, or -1.
  int Leader() const;

  uint64_t unit_;
  size_t buffers_;
  uint64_t restarts_ = 0;  // perturbed runs handed out so far
  std::vector<int> progress_ = std::vector<int>(kBaseOrderCount, 0);
};

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_PARALLEL_SEARCH_H_
