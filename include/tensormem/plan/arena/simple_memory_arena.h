// SimpleMemoryArena: offsets in one growable buffer, TFLite-style.
//
// Allocate hands out an offset for a block of `size` bytes; Commit then
// obtains (or grows) the real buffer and Resolve turns an allocation into a
// pointer. Both generations of TFLite's arena are reproduced bit-exactly:
//
//  - kQueue (TFLite 2018-2020): allocations arrive in execution order and
//    dead ones are Deallocate()d; a new block takes the tightest interior gap
//    between live blocks, else the top. The buffer is the high-water mark plus
//    twice the arena alignment.
//  - kGreedy (current TFLite): every block carries its usage interval
//    [first_node, last_node]; it may overlap in address any block whose
//    interval it does not meet, and takes the tightest gap among those that it
//    does. The buffer is exactly the high-water mark.
//
// Both measure a gap's tightness from the *unaligned* end of the block below
// it (a documented TFLite quirk, kept because it decides offsets).
//
//   SimpleMemoryArena arena({.generation = ArenaGeneration::kGreedy});
//   absl::StatusOr<ArenaAlloc> a = arena.Allocate(2047, /*alignment=*/32,
//                                                 /*tensor=*/0, 1, 3);
//   absl::StatusOr<bool> moved = arena.Commit();
//   absl::StatusOr<char*> ptr = arena.Resolve(*a);
#ifndef TENSORMEM_PLAN_ARENA_SIMPLE_MEMORY_ARENA_H_
#define TENSORMEM_PLAN_ARENA_SIMPLE_MEMORY_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tensormem/plan/arena/arena_buffer.h"

namespace tensormem {

enum class ArenaGeneration { kQueue, kGreedy };

// A usage interval that never ends (lives to the end of the run).
inline constexpr int32_t kNodeNotAssigned = std::numeric_limits<int32_t>::max();

// One planned block. `size` 0 means "nothing allocated" (resolves to null).
struct ArenaAlloc {
  size_t offset = 0;
  size_t size = 0;
  int32_t tensor = -1;
  int32_t first_node = -1;  // usage interval, closed: [first_node, last_node]
  int32_t last_node = -1;
};

class SimpleMemoryArena {
 public:
  struct Options {
    ArenaGeneration generation = ArenaGeneration::kGreedy;
    // Alignment of the buffer's base; every request's alignment must divide
    // it. A power of two.
    size_t arena_alignment = 64;
    ArenaBufferCallbacks callbacks = HostArenaBufferCallbacks();
  };

  explicit SimpleMemoryArena(Options options);

  // Plans `size` bytes aligned to `alignment` (a power of two <= the arena
  // alignment) for `tensor`, used over [first_node, last_node] (the queue
  // generation records but ignores the interval). Size 0 gives {offset 0,
  // size 0} and plans nothing. Fails on bad alignment or offset overflow.
  absl::StatusOr<ArenaAlloc> Allocate(size_t size, size_t alignment,
                                      int32_t tensor = -1,
                                      int32_t first_node = 0,
                                      int32_t last_node = kNodeNotAssigned);

  // Frees a planned block (same offset and tensor). Size 0 is a no-op.
  // FailedPrecondition if it is not planned or its size differs.
  absl::Status Deallocate(const ArenaAlloc& alloc);

  // Obtains a buffer of RequiredBufferSize() (growing, never shrinking, the
  // existing one). Returns true iff the base moved. On failure the old buffer
  // is kept and the arena stays uncommitted.
  absl::StatusOr<bool> Commit();

  // The pointer of a planned block; nullptr for size 0. FailedPrecondition
  // before Commit or when the buffer does not cover the block.
  absl::StatusOr<char*> Resolve(const ArenaAlloc& alloc) const;

  // Forgets the plan (blocks and high-water mark), keeps the buffer.
  void ClearPlan();
  // Frees the buffer, keeps the plan; Commit() gets a new one.
  void ReleaseBuffer();

  // Greedy bookkeeping of the blocks that new ones must avoid: forget all of
  // them; drop those dead before `node`; drop those first used after `node`.
  void ResetAllocs() { allocs_.clear(); }
  void PurgeActiveAllocs(int32_t node);
  void PurgeAfter(int32_t node);
  // Rebuilds the planned blocks from `allocs` as they stand once `node` has
  // run: greedy keeps those whose interval contains `node`; queue those
  // allocated at or before `node` and freed after it.
  void RestoreAllocsAt(const std::vector<ArenaAlloc>& allocs, int32_t node);

  // Largest offset + size planned since the last ClearPlan.
  size_t high_water_mark() const { return high_water_mark_; }
  // What Commit asks for: hwm + 2 * arena alignment (queue) or hwm (greedy).
  absl::StatusOr<size_t> RequiredBufferSize() const;
  size_t buffer_size() const { return buffer_.size(); }
  char* base() const { return buffer_.data(); }
  bool committed() const { return committed_; }
  ArenaGeneration generation() const { return options_.generation; }
  // Planned blocks in offset order.
  const std::vector<ArenaAlloc>& allocs() const { return allocs_; }

 private:
  absl::Status CheckAlignment(size_t alignment) const;
  // Offset of a new block of `size` per each generation's best-fit rule.
  absl::StatusOr<size_t> QueueOffset(size_t size, size_t alignment) const;
  absl::StatusOr<size_t> GreedyOffset(size_t size, size_t alignment,
                                      int32_t first_node,
                                      int32_t last_node) const;

  Options options_;
  ArenaBuffer buffer_;
  std::vector<ArenaAlloc> allocs_;  // sorted by offset
  size_t high_water_mark_ = 0;
  bool committed_ = false;
};

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_ARENA_SIMPLE_MEMORY_ARENA_H_
