#include "plan/solver/parallel_search.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

namespace tensormem::solver_internal {

FeasibilityAnswer RunFeasibility(const Problem& problem,
                                 const FeasibilityRequest& request) {
  FeasibilityAnswer answer;
  std::atomic<bool> stop{false};
  std::atomic<size_t> next_order{0};
  std::mutex mutex;  // guards answer

  auto worker = [&] {
    while (!stop.load()) {
      const size_t k = next_order.fetch_add(1);
      if (k >= request.orders.size()) return;
      FeasibilitySearch search(problem, request.orders[k]);
      const SearchOutcome outcome =
          search.Run(request.capacity, {.node_limit = request.node_limit,
                                        .deadline = request.deadline,
                                        .stop = &stop});
      std::lock_guard lock(mutex);
      answer.nodes += search.nodes();
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
      1,
      std::min<int>(request.threads, static_cast<int>(request.orders.size())));
  if (threads == 1) {
    worker();
  } else {
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  }
  return answer;
}

}  // namespace tensormem::solver_internal
