// Objects in use during a walk over records in input order, keyed by the last
// task of their current tensor: the strategies that walk records in order
// release every object whose tensor ended before the next tensor starts.
#ifndef TENSORMEM_SRC_PLAN_IN_USE_OBJECTS_H_
#define TENSORMEM_SRC_PLAN_IN_USE_OBJECTS_H_

#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "tensormem/plan/usage_record.h"

namespace tensormem::internal {

class InUseObjects {
 public:
  void Add(TaskId last_task, size_t object) {
    heap_.emplace(last_task, object);
  }

  // Calls `release(object)` for every object whose last task is before
  // `task`, in order of (last task, object id).
  template <typename Release>
  void ReleaseBefore(TaskId task, Release&& release) {
    while (!heap_.empty() && heap_.top().first < task) {
      release(heap_.top().second);
      heap_.pop();
    }
  }

 private:
  using Entry = std::pair<TaskId, size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
};

}  // namespace tensormem::internal

#endif  // TENSORMEM_SRC_PLAN_IN_USE_OBJECTS_H_
