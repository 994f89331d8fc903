#include "plan/solver/suspended_search.h"

#include "plan/solver/solver_clock.h"

namespace tensormem::solver_internal {

SuspendedSearch::SuspendedSearch(const Problem& problem, int order,
                                 uint64_t capacity,
                                 std::chrono::steady_clock::time_point deadline,
                                 const std::atomic<bool>* stop,
                                 const std::atomic<bool>* cancel)
    : search_(problem, order),
      capacity_(capacity),
      deadline_(deadline),
      stop_(stop),
      cancel_(cancel) {}

SuspendedSearch::~SuspendedSearch() {
  {
    std::lock_guard lock(mutex_);
    abort_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

SuspendedSearch::Slice SuspendedSearch::Resume(uint64_t nodes) {
  std::lock_guard turn(turn_);
  std::unique_lock lock(mutex_);
  Slice slice;
  if (finished_) {
    slice.outcome = outcome_;
    return slice;
  }
  const uint64_t before = search_.nodes();
  limit_ = before + nodes;
  running_ = true;
  if (!thread_.joinable()) {
    thread_ = std::thread(WithTheCallersClock([this] { Body(); }));
  } else {
    changed_.notify_all();
  }
  changed_.wait(lock, [&] { return !running_; });
  slice.nodes = search_.nodes() - before;
  slice.deepest = search_.deepest();
  if (finished_) {
    slice.outcome = outcome_;
    if (outcome_ == SearchOutcome::kFound) slice.offsets = search_.offsets();
  }
  return slice;
}

void SuspendedSearch::Body() {
  uint64_t first_limit;
  {
    std::lock_guard lock(mutex_);
    first_limit = limit_;
  }
  // At its node limit the search hands the turn back and waits for more.
  auto pause = [this](uint64_t) -> uint64_t {
    std::unique_lock lock(mutex_);
    running_ = false;
    changed_.notify_all();
    changed_.wait(lock, [&] { return running_ || abort_; });
    return abort_ ? 0 : limit_;
  };
  const SearchOutcome outcome =
      search_.Run(capacity_, {.node_limit = first_limit,
                              .deadline = deadline_,
                              .stop = stop_,
                              .cancel = cancel_,
                              .pause = pause});
  std::lock_guard lock(mutex_);
  finished_ = true;
  outcome_ = outcome;
  running_ = false;
  changed_.notify_all();
}

}  // namespace tensormem::solver_internal
