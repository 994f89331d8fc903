#include "alloc/thread_numbers.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace tensormem::internal {
namespace {

// Numbers for the threads that allocate from sharded allocators. A thread
// takes the lowest number no live thread holds when it first allocates, and
// gives it back when it exits, so N threads alive at once on N shards each
// get a shard of their own however many threads came and went before. (A
// counter handed a long-lived thread and three new ones the same shard
// whenever three threads had come and gone in between: two threads then
// took turns on one lock.)
class ThreadNumbers {
 public:
  uint32_t Take() {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto free = std::find(taken_.begin(), taken_.end(), false);
    const auto number = static_cast<uint32_t>(free - taken_.begin());
    if (free == taken_.end()) {
      taken_.push_back(true);
    } else {
      *free = true;
    }
    return number;
  }
  void Give(uint32_t number) {
    std::lock_guard<std::mutex> lock(mutex_);
    taken_[number] = false;
  }

 private:
  std::mutex mutex_;
  std::vector<bool> taken_;  // guarded by mutex_
};

ThreadNumbers& Numbers() {
  static auto* const numbers = new ThreadNumbers;
  return *numbers;
}

// Held by each thread from its first allocation to its exit.
struct HeldThreadNumber {
  HeldThreadNumber() : value(Numbers().Take()) {}
  ~HeldThreadNumber() { Numbers().Give(value); }
  HeldThreadNumber(const HeldThreadNumber&) = delete;
  HeldThreadNumber& operator=(const HeldThreadNumber&) = delete;
  const uint32_t value;
};

}  // namespace

uint32_t ThreadNumber() {
  thread_local const HeldThreadNumber number;
  return number.value;
}

}  // namespace tensormem::internal
