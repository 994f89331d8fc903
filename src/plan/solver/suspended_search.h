// SuspendedSearch: a feasibility search that can be paused after some nodes
// and resumed later, so an order that needs many nodes is extended instead of
// restarted from its root. Restarting with a doubled limit costs up to twice
// the nodes; resuming costs none.
//
// The search runs on its own thread, which only ever runs while a caller is
// blocked in Resume: the work is handed over, not shared, so it costs CPU
// only when it is the search's turn.
//
//   SuspendedSearch search(problem, /*order=*/2, capacity, deadline);
//   while (search.Resume(/*nodes=*/4000) == SearchOutcome::kStopped) { ... }
#ifndef TENSORMEM_PLAN_SOLVER_SUSPENDED_SEARCH_H_
#define TENSORMEM_PLAN_SOLVER_SUSPENDED_SEARCH_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "plan/solver/feasibility_search.h"
#include "plan/solver/problem.h"

namespace tensormem::solver_internal {

class SuspendedSearch {
 public:
  // `stop` or `cancel` (may be null), when set by another thread, end the
  // search for good (they mean "the question is answered", "give up").
  SuspendedSearch(const Problem& problem, int order, uint64_t capacity,
                  std::chrono::steady_clock::time_point deadline,
                  const std::atomic<bool>* stop,
                  const std::atomic<bool>* cancel);
  ~SuspendedSearch();
  SuspendedSearch(const SuspendedSearch&) = delete;
  SuspendedSearch& operator=(const SuspendedSearch&) = delete;

  struct Slice {
    SearchOutcome outcome = SearchOutcome::kStopped;  // kStopped: paused
    uint64_t nodes = 0;                               // visited in this slice
    int deepest = 0;                // most buffers placed so far
    std::vector<uint64_t> offsets;  // when kFound
  };
  // Lets the search visit up to `nodes` more nodes. Callers on several
  // threads take turns.
  Slice Resume(uint64_t nodes);

 private:
  void Body();

  FeasibilitySearch search_;
  const uint64_t capacity_;
  const std::chrono::steady_clock::time_point deadline_;
  const std::atomic<bool>* const stop_;
  const std::atomic<bool>* const cancel_;
  std::mutex turn_;  // one Resume at a time
  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t limit_ = 0;    // node limit granted so far
  bool running_ = false;  // the search thread has the turn
  bool finished_ = false;
  bool abort_ = false;
  SearchOutcome outcome_ = SearchOutcome::kStopped;
  std::thread thread_;  // started by the first Resume
};

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_SUSPENDED_SEARCH_H_
