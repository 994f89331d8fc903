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
#include "alloc/loop_placement.h"
#include "alloc/loop_plan.h"
#include "alloc/placement_job.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/memory_dump.h"
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
  static constexpr uint32_t kNoGate = ~uint32_t{0};
  struct FallbackBlock {
    uint64_t sequence;
    uint64_t requested;
    uint64_t bytes;
    // A block the plan was placed around that it reuses once freed: the
    // index of its gate (kNoGate: none).
    uint32_t gate = kNoGate;
  };

  // Serving: the arena address for `request`, counted as live and handed
  // out, or nullptr when the fallback serves it (it outlives the iteration,
  // its place is still occupied, or it ends the plan).
  void* ServeFromPlan(const LoopEvent& request);
  void* AllocateFromFallback(const LoopEvent& request);
  bool FreeLocked(void* ptr);
  bool BeginIteration();
  // Counts the iteration once every request and arena free of it came.
  void CountWholeIteration();
  void MarkFreed(uint32_t free_rank);
  // Learning: takes a plan the learner found when the next iteration begins
  // now, with `request` (nullptr: at a MarkIteration call).
  void MaybeTakeOver(const LoopEvent* request);
  // planned_takeover.cc. The arena is placed around the fallback's blocks
  // in its one region (TakeOverInPlace), or else taken as one block of its
  // own; kNoRoom when it cannot be had without raising the pool's peak, and
  // kWaiting while the placement in the region is being made.
  enum class TakeOverStep { kServing, kWaiting, kNoRoom };
  TakeOverStep TakeOver(const std::shared_ptr<const LoopPlan>& plan);
  // The room rule of a take-over: `bytes` more in the pool keep it within
  // its high-water mark plus the growth allowance.
  bool HasRoomFor(uint64_t bytes) const;
  bool PoolWithinRoom(uint64_t pool_bytes) const;  // the rule, for a pool
  TakeOverStep TakeOverInPlace(const std::shared_ptr<const LoopPlan>& plan);
  // kServing when `placement_` holds a placement of `plan` around `live`;
  // kWaiting while one is made (started now when there was none, or when
  // the blocks moved since the last); kNoRoom when they moved too often.
  TakeOverStep PlaceInPool(const std::shared_ptr<const LoopPlan>& plan,
                           std::vector<LiveBlock> live, uint64_t region_bytes);
  // TakeOverInPlace's steps: the blocks in the region (their addresses in
  // `ptrs`); the memory below `top` taken from the fallback (TakeBelow:
  // false, with some in `taken`, when a chunk could not be had or the pool
  // would break the room rule, counting `outliving_bytes`), its free chunks
  // and then its decommitted ones (TakeChunks), which RecommitBytes commit
  // again; the gates of the blocks the placement reuses.
  std::vector<LiveBlock> LiveBlocksIn(const MemoryDump::Region& region,
                                      const LoopPlan& plan,
                                      std::vector<void*>& ptrs) const;
  bool TakeBelow(const MemoryDump::Region& region, uint64_t top,
                 uint64_t outliving_bytes, std::vector<void*>& taken);
  bool TakeChunks(const MemoryDump::Region& region, uint64_t top,
                  bool decommitted, std::vector<void*>& taken);
  uint64_t RecommitBytes(const MemoryDump::Region& region, uint64_t top) const;
  // What the pool holds of `region` below `top` once a placement serves
  // there: all of it, in whole granules (a lower bound of the pool then).
  uint64_t CommittedBelow(const MemoryDump::Region& region, uint64_t top) const;
  void ArmGates(PlacementAround& placed, const std::vector<void*>& live_ptrs);
  void BeginServing(std::shared_ptr<const LoopPlan> plan, char* arena);
  // Serving: true while a live block the plan was placed around still holds
  // part of the place of request `position`.
  bool Gated(uint32_t position) const;
  // Serving: true while an arena block lies where request `position` is
  // placed between a wrapping block's instances.
  bool Guarded(uint32_t position) const;
  // A freed block the plan was placed around: its memory joins the arena.
  void ReleaseGate(void* ptr, uint32_t gate);
  // Follows `ready_` through an iteration without serving it: false when
  // `request` is not the one it plans next.
  bool Shadow(const LoopEvent& request);
  void EndPlan();           // a request broke it: learn again
  void ReleaseIdleArena();  // once no plan serves and nothing lives in it
  // Once no plan serves: the arena's chunks that hold no live block go back
  // to the fallback (all of it, and the arena, when none is live).
  void ReleaseArena();
  void ForgetGates();  // the blocks the plan was placed around are unmarked
  // The position of the live arena block at `ptr` in arena_plan_, or -1
  // (any pointer: one outside the arena is -1).
  int32_t ArenaPosition(const void* ptr) const;
  // ArenaPosition's first try: the block whose free the plan expects next,
  // found without a lookup; else -1.
  int32_t ExpectedFree(const void* ptr) const;
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
  // ready_ placed around the blocks live at a boundary; started again when
  // they moved, up to a limit.
  PlacementJob placement_;
  int placements_started_ = 0;

  // Serving. `arena_plan_` placed the arena now held; `plan_` is it while
  // it serves, nullptr once it ended (its blocks may still be live).
  std::shared_ptr<const LoopPlan> plan_, arena_plan_;
  int64_t iterations_before_plan_ = 0;  // status_.planned_iterations then
  uint32_t position_ = 0;
  bool iteration_counted_ = false;
  uint32_t frontier_ = 0;
  std::vector<uint8_t> freed_;  // by free rank, this iteration
  char* arena_ = nullptr;       // the base of the arena's offsets
  char* arena_end_ = nullptr;   // arena_ + its plan's arena_bytes
  // What the arena holds of the fallback's memory: one block, or (placed in
  // place) the free chunks taken and the freed blocks it reuses.
  std::vector<void*> arena_chunks_;
  // Placed in place: request j waits for the live blocks gates_[k],
  // gate_begin_[j] <= k < gate_begin_[j + 1], to be freed.
  std::vector<uint32_t> gate_begin_, gates_;
  // And while an arena block is live at slots guards_[k], guard_begin_[j]
  // <= k < guard_begin_[j + 1] (empty: no guards).
  std::vector<uint32_t> guard_begin_, guards_;
  std::vector<uint8_t> gate_live_;  // by gate
  std::vector<const void*> gate_blocks_;
  uint32_t gates_live_ = 0;
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
