// PlannedServing: the state behind PlannedAllocator (planned_allocator.h):
// the calls logged for the learner, the plan that serves, its arena, and the
// blocks the fallback served. Every member function takes the lock.
//
// While a plan serves, `position_` is the next request of the iteration. An
// arena block may be handed out once every arena free planned before it was
// made: frees are counted in their planned order (`frontier_`: the first
// free rank not yet made; frees made early wait in `freed_`), so a block
// never lands on one still live, whatever order the frees come in.
#ifndef TENSORMEM_SRC_ALLOC_PLANNED_SERVING_H_
#define TENSORMEM_SRC_ALLOC_PLANNED_SERVING_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "alloc/loop_learner.h"
#include "alloc/loop_plan.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/planned_allocator.h"
#include "tensormem/core/futex_mutex.h"

namespace tensormem::alloc_internal {

class PlannedServing {
 public:
  PlannedServing(BfcAllocator& fallback, bool background_planning,
                 uint64_t growth_allowance);
  ~PlannedServing();  // the arena goes back to the fallback

  void* Allocate(const LoopEvent& request);
  absl::Status Deallocate(void* ptr);
  bool FreeIfLive(void* ptr);  // false, changing nothing, on misuse
  void MarkIteration();

  // Adjusts the fallback's statistics (`stats`) to the blocks handed out.
  void FillStats(AllocatorStats& stats) const;
  void ClearStats();
  std::optional<size_t> RequestedSize(const void* ptr) const;
  std::optional<size_t> AllocatedSize(const void* ptr) const;
  PlannedAllocator::LoopStatus Status() const;

 private:
  struct FallbackBlock {
    uint64_t sequence;
    uint64_t requested;
    uint64_t bytes;
  };

  // Serving: the arena address for `request`, or nullptr when the fallback
  // serves it (it outlives the iteration, its place is still occupied, or
  // it ends the plan).
  void* ServeFromPlan(const LoopEvent& request);
  void* AllocateFromFallback(const LoopEvent& request);
  bool FreeLocked(void* ptr);
  bool BeginIteration();
  void MarkFreed(uint32_t free_rank);
  // Learning: takes a plan the learner found when the next iteration begins
  // now, with `request` (nullptr: at a MarkIteration call).
  void MaybeTakeOver(const LoopEvent* request);
  // False when the arena cannot be had without raising the pool's peak.
  bool TakeOver(std::shared_ptr<const LoopPlan> plan);
  // Follows `ready_` through an iteration without serving it: false when
  // `request` is not the one it plans next.
  bool Shadow(const LoopEvent& request);
  void EndPlan();           // a request broke it: learn again
  void ReleaseIdleArena();  // once no plan serves and nothing lives in it
  // The position of the live arena block at `ptr` in arena_plan_, or -1.
  int32_t ArenaPosition(const void* ptr) const;
  void Log(const LoopEvent& event);
  void Account(uint64_t requested, uint64_t bytes);
  void Unaccount(uint64_t requested, uint64_t bytes);
  bool InArena(const void* ptr) const;

  BfcAllocator& fallback_;
  const uint64_t growth_allowance_;
  LoopLearner learner_;
  mutable FutexMutex mutex_;

  // Learning.
  std::vector<LoopEvent> pending_;         // not yet handed to the learner
  uint64_t next_sequence_ = 0;             // of the next allocation
  size_t logged_since_learning_ = 0;       // began or resumed
  std::shared_ptr<const LoopPlan> ready_;  // found, waiting for its boundary
  int64_t shadowed_ = -1;  // requests of ready_'s iteration followed so far

  // Serving. `arena_plan_` placed the arena now held; `plan_` is it while
  // it serves, nullptr once it ended (its blocks may still be live).
  std::shared_ptr<const LoopPlan> plan_, arena_plan_;
  int64_t iterations_before_plan_ = 0;  // status_.planned_iterations then
  uint32_t position_ = 0;
  uint32_t frontier_ = 0;
  std::vector<uint8_t> freed_;  // by free rank, this iteration
  char* arena_ = nullptr;
  std::vector<int32_t> live_position_;  // by slot: the live block, or -1
  size_t arena_live_ = 0;
  absl::flat_hash_map<const void*, FallbackBlock> fallback_live_;

  // Statistics.
  PlannedAllocator::LoopStatus status_;
  int64_t num_allocs_ = 0;
  uint64_t in_use_ = 0, peak_in_use_ = 0, largest_alloc_ = 0;
  uint64_t requested_ = 0;
  std::optional<uint64_t> steady_pool_, steady_requested_;
};

}  // namespace tensormem::alloc_internal

#endif  // TENSORMEM_SRC_ALLOC_PLANNED_SERVING_H_
