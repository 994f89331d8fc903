// The clock the solver's time limits are read on: the wall clock, or the
// work the solver counted.
//
// A time limit on the wall clock makes a plan depend on the machine and its
// load: the search stops wherever it was when the time ran out. In counted
// time the clock stands still but for the steps of work the solver counts,
// each about a microsecond of one core's time: a buffer placed (more when
// its gap search merges many ranges), a search node (more when many buffers
// are left to place), a spot a local move tried. On one thread, a plan made
// in counted time is then the same on every run, on any machine.
//
//   CountedTime counted;
//   {
//     CountedTimeScope scope(&counted);  // helpers: WithTheCallersClock
//     for (...) {
//       SolverClock::Count();            // one buffer placed
//       if (SolverClock::Now() >= deadline) return;
//     }
//   }
#ifndef TENSORMEM_SRC_PLAN_SOLVER_SOLVER_CLOCK_H_
#define TENSORMEM_SRC_PLAN_SOLVER_SOLVER_CLOCK_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <utility>

namespace tensormem::solver_internal {

// Steps of work counted. Threads started for the solver count into the same
// one (CountedTimeScope with it), so their deadlines agree.
class CountedTime {
 public:
  // What a step counts for. With the steps the solver counts, a counted
  // second took 1.0-1.35 s of wall time on one core here (2026-12-07, the
  // placements of the training loops in docs/planned.md).
  static constexpr std::chrono::nanoseconds kPerStep{1000};

  CountedTime() : start_(std::chrono::steady_clock::now()) {}
  CountedTime(const CountedTime&) = delete;
  CountedTime& operator=(const CountedTime&) = delete;

  void Add(uint64_t steps) {
    steps_.fetch_add(steps, std::memory_order_relaxed);
  }
  std::chrono::steady_clock::time_point Read() const {
    return start_ + steps_.load(std::memory_order_relaxed) * kPerStep;
  }

 private:
  const std::chrono::steady_clock::time_point start_;
  std::atomic<uint64_t> steps_ = 0;
};

// While it lives, the solver's clock on this thread is `counted` (null: the
// wall clock); then the one before.
class CountedTimeScope {
 public:
  explicit CountedTimeScope(CountedTime* counted);
  ~CountedTimeScope();
  CountedTimeScope(const CountedTimeScope&) = delete;
  CountedTimeScope& operator=(const CountedTimeScope&) = delete;

 private:
  CountedTime* previous_;
};

struct SolverClock {
  using time_point = std::chrono::steady_clock::time_point;
  // The wall clock, or the counted time of this thread's scope.
  static time_point Now();
  // Counts `steps` of work done on this thread (nothing on the wall clock).
  static void Count(uint64_t steps = 1);
  // The counted time this thread reads (null: the wall clock), to hand to
  // a helper thread's CountedTimeScope.
  static CountedTime* Counted();
};

// `work`, to run on a helper thread on the solver clock of the thread that
// wraps it (its counted time, or the wall clock).
template <typename Work>
auto WithTheCallersClock(Work work) {
  return [counted = SolverClock::Counted(), work = std::move(work)]() mutable {
    const CountedTimeScope scope(counted);
    work();
  };
}

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_SRC_PLAN_SOLVER_SOLVER_CLOCK_H_
