// PlannedAllocator: learns the loop a program runs and serves its iterations
// from an offline plan; the `planned` policy of the allocator specification.
//
// Training and inference repeat: after the first steps, each iteration asks
// for the same sizes in the same order and frees them at the same points. An
// online allocator cannot know that and pays fragmentation every iteration;
// an offline planner, given the iteration, places it within a fraction of a
// percent of its peak of live bytes. This allocator does both. It serves
// every request from a `tight` BFC allocator (the fallback) while it logs the
// calls; a learner finds the loop (the period with which the calls repeat,
// or the iterations between MarkIteration calls), cuts an iteration out at
// its quietest point and places the blocks that live and die inside it in
// one arena (plan/'s best_fit_multi) — on a thread of its own, so allocation
// never waits for it. At the next iteration boundary the arena is taken from
// the fallback, whose free tail is then given back, and each request of the
// iteration gets its planned offset: a comparison and a table insert, no
// search. Blocks that outlive the iteration stay with the fallback.
//
// Never worse than the fallback alone: a request that differs from the plan
// (another size, another order, an extra tensor) is served by the fallback
// and ends the plan at once; the arena goes back when its last block is
// freed, and learning resumes, so a loop that changes and settles is learnt
// again (a plan that failed is not tried again). An arena block whose planned
// place is still occupied (a free came late) is served by the fallback too.
// One lock serves all threads; loops are found in the calls of all threads
// together, so only a deterministic order repeats.
//
//   auto fallback = std::make_unique<BfcAllocator>(
//       std::make_unique<SimulatedSubAllocator>(kGiB), kGiB,
//       BfcAllocatorOptions{}, *CreatePolicy("tight", {.memory_limit = kGiB}));
//   PlannedAllocator allocator(std::move(fallback));
//   for (int step = 0; step < 10; ++step) {
//     allocator.MarkIteration();  // optional: the loop is found without it
//     void* a = allocator.Allocate(1 << 20);
//     allocator.Deallocate(a);
//   }
//   allocator.loop_status().planned_iterations;  // 7: steps 3 to 9
#ifndef TENSORMEM_ALLOC_PLANNED_ALLOCATOR_H_
#define TENSORMEM_ALLOC_PLANNED_ALLOCATOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tensormem/alloc/allocator.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace alloc_internal {
class PlannedServing;
}  // namespace alloc_internal

struct PlannedAllocatorOptions {
  // Find loops, plan, and place plans in the pool on threads of the
  // allocator's own (allocation never waits), or on the allocating thread
  // when due: the same calls then take over at the same iteration in every
  // run (tests, reproducible replays).
  bool background_planning = true;
  // Taking a plan over may raise the pool's high-water mark by at most this
  // much (the fallback's growth granule: never more than it would hold).
  uint64_t growth_allowance = 2 * kMiB;
};

class PlannedAllocator final : public Allocator {
 public:
  // `fallback` serves what no plan does and holds the arena.
  explicit PlannedAllocator(std::unique_ptr<BfcAllocator> fallback,
                            PlannedAllocatorOptions options = {});
  ~PlannedAllocator() override;

  std::string Name() const override;
  // The fallback's, with blocks counted as handed out (the arena is not one
  // block in use but the planned blocks live in it), and the loop figures.
  std::optional<AllocatorStats> GetStats() const override;
  bool ClearStats() override;
  std::optional<size_t> RequestedSize(const void* ptr) const override;
  std::optional<size_t> AllocatedSize(const void* ptr) const override;

  struct LoopStatus {
    int64_t plans_found = 0;       // loops found and planned
    int64_t plans_taken_over = 0;  // times a plan began serving
    // Of those, the plans placed around the fallback's blocks in its own
    // region (the others: in an arena block of their own).
    int64_t plans_placed_in_pool = 0;
    // Plans that never served: no room to take over without raising the
    // pool's high-water mark by more than the growth allowance, or the
    // iteration followed before taking over made other requests.
    int64_t plans_without_room = 0;
    int64_t plans_not_repeated = 0;
    int64_t planned_iterations = 0;  // whole iterations served from a plan
    int64_t mismatches = 0;          // plans ended by a different request
    int64_t late_frees = 0;    // arena blocks served by the fallback instead
    int64_t arena_blocks = 0;  // blocks served from an arena
    bool serving = false;      // a plan serves now
    uint64_t period = 0;       // allocations per iteration of that plan
    // Iterations one period of that plan covers: 2 when it was unrolled for
    // blocks that overlap their next instance (an output bound again).
    int iterations_per_plan = 0;
    uint64_t arena_bytes = 0;  // the arena now held (0: none)
  };
  LoopStatus loop_status() const;

  BfcAllocator& fallback() { return *fallback_; }

 private:
  void* DoAllocate(size_t bytes, size_t alignment, int32_t stream) override;
  absl::Status DoDeallocate(void* ptr) override;
  bool DoFreeIfLive(void* ptr) override;
  void DoMarkIteration() override;

  std::unique_ptr<BfcAllocator> fallback_;
  // Learning and serving state, under its own lock.
  std::unique_ptr<alloc_internal::PlannedServing> serving_;
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_PLANNED_ALLOCATOR_H_
