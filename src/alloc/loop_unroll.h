// Two iterations of a loop as one: for blocks an iteration hands on to the
// next that are still live when their next instance is made.
//
// A training step's output bound again to the same Python variable (the
// logits, the loss) is freed only once the next step has made its new one,
// so two instances live at once: one place per request cannot hold them.
// Over two iterations each instance is a request of its own, and the two
// places alternate. The second iteration of the unrolled history is the
// first one again, its frees renumbered as the next iteration's would be.
//
//   UnrolledLoop twice = UnrollTwice(history, shape, begin, end, freed_next);
//   absl::StatusOr<LoopPlan> plan = BuildLoopPlan(twice.history, twice.shape);
#ifndef TENSORMEM_SRC_ALLOC_LOOP_UNROLL_H_
#define TENSORMEM_SRC_ALLOC_LOOP_UNROLL_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "alloc/loop_plan.h"

namespace tensormem::alloc_internal {

// Blocks that overlap their next instance are unrolled into a plan of two
// iterations when they are at least 1/this of the arena's peak of live
// bytes (a plan twice as long, learnt an iteration later): left to the
// fallback, a 2 MiB output beside a 300 MiB peak raised the pool by two
// granules over `tight`'s.
inline constexpr uint64_t kUnrollShare = 1024;

struct UnrolledLoop {
  // The iteration, the same again, then what the history holds of the
  // iteration after it (there, the beginning of the next unrolled one).
  LoopHistory history;
  LoopShape shape;  // twice the period, the same first allocation and key
};

// Unrolls the iteration of `shape` that occupies events [begin, end) of
// `history` (BuildLoopPlan's range: for a marked loop, the events between
// its marks). `freed_next[j]`: when the next iteration frees the iteration's
// allocation j, in events from its start, or -1 (freed within the iteration,
// or not in the next one).
UnrolledLoop UnrollTwice(const LoopHistory& history, const LoopShape& shape,
                         size_t begin, size_t end,
                         const std::vector<int64_t>& freed_next);

}  // namespace tensormem::alloc_internal

#endif  // TENSORMEM_SRC_ALLOC_LOOP_UNROLL_H_
