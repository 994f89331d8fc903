// The positions of a loop history's allocations and marks, for the
// detector (loop_plan.cc) and the planner (loop_plan_build.cc).
#ifndef TENSORMEM_SRC_ALLOC_LOOP_INDEX_H_
#define TENSORMEM_SRC_ALLOC_LOOP_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "alloc/loop_plan.h"

namespace tensormem::alloc_internal {

struct IndexedHistory {
  std::vector<uint32_t> allocs;  // event index of each allocation
  std::vector<uint32_t> marks;   // event index of each mark
};

inline IndexedHistory Index(const LoopHistory& history) {
  IndexedHistory index;
  for (uint32_t i = 0; i < history.events.size(); ++i) {
    const LoopEventKind kind = history.events[i].kind;
    if (kind == LoopEventKind::kAlloc) index.allocs.push_back(i);
    if (kind == LoopEventKind::kMark) index.marks.push_back(i);
  }
  return index;
}

inline const LoopEvent& AllocAt(const LoopHistory& history,
                                const IndexedHistory& index, size_t i) {
  return history.events[index.allocs[i]];
}

}  // namespace tensormem::alloc_internal

#endif  // TENSORMEM_SRC_ALLOC_LOOP_INDEX_H_
