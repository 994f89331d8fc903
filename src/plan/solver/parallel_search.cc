#include "plan/solver/parallel_search.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include "plan/solver/solver_clock.h"

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

void KeptSearches::Prepare(uint64_t capacity,
                           std::chrono::steady_clock::time_point deadline,
                           const std::atomic<bool>* cancel) {
  std::lock_guard lock(mutex_);
  if (capacity != capacity_ || deadline != deadline_ || cancel != cancel_)
    searches_.clear();
  cancel_ = cancel;
  stop_.store(false);
  capacity_ = capacity;
  deadline_ = deadline;
  searches_.resize(kBaseOrderCount);
}

SuspendedSearch& KeptSearches::For(int order) {
  std::lock_guard lock(mutex_);
  std::unique_ptr<SuspendedSearch>& search = searches_.at(order);
  if (search == nullptr) {
    search = std::make_unique<SuspendedSearch>(problem_, order, capacity_,
                                               deadline_, &stop_, cancel_);
  }
  return *search;
}

FeasibilityAnswer RunFeasibility(const Problem& problem,
                                 const FeasibilityRequest& request) {
  FeasibilityAnswer answer;
  answer.deepest.assign(request.runs.size(), -1);
  KeptSearches* kept = request.kept;
  if (kept != nullptr)
    kept->Prepare(request.capacity, request.deadline, request.cancel);
  std::atomic<bool> local_stop{false};
  std::atomic<bool>& stop = kept != nullptr ? kept->stop() : local_stop;
  std::atomic<size_t> next_run{0};
  std::mutex mutex;  // guards answer

  auto worker = [&] {
    while (!stop.load()) {
      const size_t k = next_run.fetch_add(1);
      if (k >= request.runs.size()) return;
      const OrderRun& run = request.runs[k];
      SuspendedSearch::Slice slice;
      if (run.resume && kept != nullptr) {
        slice = kept->For(run.order).Resume(run.node_limit);
      } else {
        FeasibilitySearch search(problem, run.order);
        slice.outcome =
            search.Run(request.capacity, {.node_limit = run.node_limit,
                                          .deadline = request.deadline,
                                          .stop = &stop,
                                          .cancel = request.cancel});
        slice.nodes = search.nodes();
        slice.deepest = search.deepest();
        if (slice.outcome == SearchOutcome::kFound)
          slice.offsets = search.offsets();
      }
      std::lock_guard lock(mutex);
      answer.nodes += slice.nodes;
      answer.deepest[k] = slice.deepest;
      if (slice.outcome == SearchOutcome::kStopped ||
          answer.outcome != SearchOutcome::kStopped) {
        continue;
      }
      answer.outcome = slice.outcome;
      answer.offsets = std::move(slice.offsets);
      stop.store(true);
    }
  };
  const int threads = std::max(
      1, std::min<int>(request.threads, static_cast<int>(request.runs.size())));
  if (threads == 1) {
    worker();
  } else {
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back(WithTheCallersClock(std::ref(worker)));
  }
  return answer;
}

uint64_t RestartSchedule::FirstNodeLimit(size_t buffers) {
  return std::max<uint64_t>(2000, 8 * uint64_t{buffers});
}

RestartSchedule::RestartSchedule(size_t buffers)
    : unit_(std::max<uint64_t>(1000, 8 * buffers)), buffers_(buffers) {}

std::vector<OrderRun> RestartSchedule::Runs(uint64_t node_limit, bool resume) {
  const int leader = Leader();
  std::vector<OrderRun> base;
  uint64_t budget = 0;
  const int slices = resume ? kSlices : 1;
  for (int slice = 0; slice < slices; ++slice) {
    for (int k = 0; k < kBaseOrderCount; ++k) {
      const uint64_t limit = k == leader ? 2 * node_limit : node_limit;
      base.push_back({k, std::max<uint64_t>(1, limit / slices), resume});
      budget += base.back().node_limit;
    }
  }
  budget = budget * kRestartPercent / 100;
  // Interleave: a restart whenever restarts are behind their share of the
  // base nodes handed out so far, so a short restart never waits behind all
  // the long runs, nor runs ahead of them on a set a base order settles.
  std::vector<OrderRun> runs;
  uint64_t base_nodes = 0, restart_nodes = 0;
  size_t next_base = 0;
  while (next_base < base.size() || restart_nodes < budget) {
    const bool restart_due =
        restart_nodes < budget &&
        (next_base == base.size() ||
         restart_nodes * 100 < base_nodes * kRestartPercent);
    if (!restart_due) {
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

int RestartSchedule::Leader() const {
  const int best = static_cast<int>(
      std::max_element(progress_.begin(), progress_.end()) - progress_.begin());
  int second = 0;
  for (int k = 0; k < kBaseOrderCount; ++k) {
    if (k != best) second = std::max(second, progress_[k]);
  }
  // Depth creeps up in every order; only a clear lead predicts a finish.
  // MiniMalloc's A: order 0 leads by 31% of the buffers and finishes first;
  // B: order 4 leads by 5% and never finishes (with it doubled, B takes
  // 380k nodes instead of 317k).
  const bool clear = (progress_[best] - second) * 100 >=
                     kLeaderMarginPercent * static_cast<int64_t>(buffers_);
  return clear && progress_[best] > 0 ? best : -1;
}

void RestartSchedule::Record(const std::vector<OrderRun>& runs,
                             const FeasibilityAnswer& answer) {
  for (size_t k = 0; k < runs.size(); ++k) {
    if (runs[k].order < kBaseOrderCount && answer.deepest[k] >= 0)
      progress_[runs[k].order] = answer.deepest[k];
  }
}

}  // namespace tensormem::solver_internal
