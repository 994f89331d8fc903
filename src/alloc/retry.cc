#include "tensormem/alloc/retry.h"

#include <chrono>
#include <optional>

namespace tensormem {
namespace {

using Clock = std::chrono::steady_clock;

// The moment to give up, or nullopt for never. Saturates instead of
// overflowing the clock for absurdly long deadlines.
std::optional<Clock::time_point> GiveUpTime(Clock::time_point start,
                                            absl::Duration deadline) {
  if (deadline == absl::InfiniteDuration()) return std::nullopt;
  if (deadline < absl::ZeroDuration()) deadline = absl::ZeroDuration();
  const absl::Duration kLongest = absl::Hours(24 * 365 * 100);
  if (deadline > kLongest) return std::nullopt;
  return start + std::chrono::duration_cast<Clock::duration>(
                     absl::ToChronoNanoseconds(deadline));
}

}  // namespace

void* AllocationRetrier::AllocateWithRetry(
    absl::FunctionRef<void*(bool verbose)> attempt, absl::Duration deadline) {
  uint64_t seen_generation = dealloc_generation_.load();
  if (void* ptr = attempt(false); ptr != nullptr) return ptr;

  const Clock::time_point start = Clock::now();
  const std::optional<Clock::time_point> give_up = GiveUpTime(start, deadline);
  auto before_deadline = [&give_up] {
    return !give_up.has_value() || Clock::now() < *give_up;
  };
  auto record_wait = [this, start] {
    std::lock_guard<std::mutex> lock(mutex_);
    total_wait_ += absl::FromChrono(Clock::now() - start);
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++retried_calls_;
  }
  while (before_deadline()) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ++waiters_;
      // Waiting for a generation change rather than for the signal alone
      // means a free between the failed attempt and this wait still counts.
      auto freed = [&] {
        return dealloc_generation_.load() != seen_generation;
      };
      if (give_up.has_value()) {
        memory_returned_.wait_until(lock, *give_up, freed);
      } else {
        memory_returned_.wait(lock, freed);
      }
      --waiters_;
      if (!freed()) break;  // the deadline passed without a free
      seen_generation = dealloc_generation_.load();
    }
    if (void* ptr = attempt(false); ptr != nullptr) {
      record_wait();
      return ptr;
    }
  }
  void* ptr = attempt(true);
  record_wait();
  return ptr;
}

void AllocationRetrier::NotifyDealloc() {
  dealloc_generation_.fetch_add(1);
  if (waiters_.load() == 0) return;
  // Taking the lock orders this signal after a waiter's check-then-wait.
  std::lock_guard<std::mutex> lock(mutex_);
  memory_returned_.notify_all();
}

absl::Duration AllocationRetrier::total_wait() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return total_wait_;
}

int64_t AllocationRetrier::retried_calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return retried_calls_;
}

}  // namespace tensormem
