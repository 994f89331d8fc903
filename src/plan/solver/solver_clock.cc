#include "plan/solver/solver_clock.h"

namespace tensormem::solver_internal {
namespace {

thread_local CountedTime* this_threads_count = nullptr;

}  // namespace

CountedTimeScope::CountedTimeScope(CountedTime* counted)
    : previous_(this_threads_count) {
  this_threads_count = counted;
}

CountedTimeScope::~CountedTimeScope() { this_threads_count = previous_; }

SolverClock::time_point SolverClock::Now() {
  return this_threads_count == nullptr ? std::chrono::steady_clock::now()
                                       : this_threads_count->Read();
}

void SolverClock::Count(uint64_t steps) {
  if (this_threads_count != nullptr) this_threads_count->Add(steps);
}

CountedTime* SolverClock::Counted() { return this_threads_count; }

}  // namespace tensormem::solver_internal
