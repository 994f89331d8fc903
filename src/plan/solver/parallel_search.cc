#include "plan/solver/parallel_search.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

namespace tensormem::solver_internal {
namespace {

// The Luby sequence 1, 1, 2, 1, 1, 2, 4, 1, ... (index from 1): restart
// lengths within a factor of the best fixed length, whatever it is.
uint64_t Luby(uint64_t i) {
  while (true) {
    uint64_t power = 1;
    while (power * 2 - 1 < i) power *= 2;
    if (power * 2 - 1 == i) return power;
    i -= power - 1;
  }
}

}  // namespace

FeasibilityAnswer RunFeasibility(const Problem& problem,
                                 const FeasibilityRequest& request) {
  FeasibilityAnswer answer;
  answer.deepest.assign(request.runs.size(), -1);
  std::atomic<bool> stop{false};
  std::atomic<size_t> next_run{0};
  std::mutex mutex;  // guards answer

  auto worker = [&] {
    while (!stop.load()) {
      const size_t k = next_run.fetch_add(1);
      if (k >= request.runs.size()) return;
      FeasibilitySearch search(problem, request.runs[k].order);
      const SearchOutcome outcome = search.Run(
          request.capacity, {.node_limit = request.runs[k].node_limit,
                             .deadline = request.deadline,
                             .stop = &stop});
      std::lock_guard lock(mutex);
      answer.nodes += search.nodes();
      answer.deepest[k] = search.deepest();
      if (outcome == SearchOutcome::kStopped ||
          answer.outcome != SearchOutcome::kStopped) {
        continue;
      }
      answer.outcome = outcome;
      if (outcome == SearchOutcome::kFound) answer.offsets = search.offsets();
      stop.store(true);
    }
  };
  const int threads = std::max(
      1, std::min<int>(request.threads, static_cast<int>(request.runs.size())));
  if (threads == 1) {
    worker();
  } else {
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  }
  return answer;
}

RestartSchedule::RestartSchedule(size_t buffers)
    : unit_(std::max<uint64_t>(1000, 8 * buffers)) {}

std::vector<OrderRun> RestartSchedule::Runs(uint64_t node_limit) {
  const int leader = static_cast<int>(
      std::max_element(progress_.begin(), progress_.end()) - progress_.begin());
  std::vector<OrderRun> base;
  uint64_t budget = 0;
  for (int k = 0; k < kBaseOrderCount; ++k) {
    const uint64_t limit =
        k == leader && progress_[k] > 0 ? 2 * node_limit : node_limit;
    base.push_back({k, limit});
    budget += limit;
  }
  // Interleave: always extend whichever stream has been given fewer nodes,
  // so a short restart never waits behind all the long runs.
  std::vector<OrderRun> runs;
  uint64_t base_nodes = 0, restart_nodes = 0;
  size_t next_base = 0;
  while (next_base < base.size() || restart_nodes < budget) {
    if (next_base < base.size() &&
        (base_nodes <= restart_nodes || restart_nodes >= budget)) {
      base_nodes += base[next_base].node_limit;
      runs.push_back(base[next_base++]);
    } else {
      ++restarts_;
      const uint64_t limit = unit_ * Luby(restarts_);
      runs.push_back({static_cast<int>(kBaseOrderCount + restarts_), limit});
      restart_nodes += limit;
    }
  }
  return runs;
}

void RestartSchedule::Record(const std::vector<OrderRun>& runs,
                             const FeasibilityAnswer& answer) {
  for (size_t k = 0; k < runs.size(); ++k) {
    if (runs[k].order < kBaseOrderCount && answer.deepest[k] >= 0)
      progress_[runs[k].order] = answer.deepest[k];
  }
}

}  // namespace tensormem::solver_internal
