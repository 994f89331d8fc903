// PlacementJob: places a learnt iteration around the pool's live blocks
// (PlaceAround) on a thread of its own, so that taking over never makes an
// allocation wait for the optimal planner; or, for reproducible runs, on the
// caller's thread.
//
// The live blocks a placement was made around must still be where they were
// when the plan takes over. At an iteration boundary of a steady loop they
// are: the fallback places the same calls the same way every iteration.
//
//   PlacementJob job(/*background=*/true);
//   job.Start(plan, live, {.limit = region_bytes});
//   ...                                  // a later boundary
//   if (job.DoneFor(plan.get()) && job.live() == live_now) use(job.Take());
#ifndef TENSORMEM_SRC_ALLOC_PLACEMENT_JOB_H_
#define TENSORMEM_SRC_ALLOC_PLACEMENT_JOB_H_

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/loop_placement.h"
#include "alloc/loop_plan.h"

namespace tensormem::alloc_internal {

class PlacementJob {
 public:
  explicit PlacementJob(bool background) : background_(background) {}
  ~PlacementJob() { Stop(); }
  PlacementJob(const PlacementJob&) = delete;
  PlacementJob& operator=(const PlacementJob&) = delete;

  // Places `plan` around `live`, stopping any job under way first. Without
  // a thread of its own the placement is done when Start returns.
  void Start(std::shared_ptr<const LoopPlan> plan, std::vector<LiveBlock> live,
             PlaceAroundOptions options);
  // Stops a placement under way and forgets the job.
  void Stop();

  // The plan of the job started last (null: none), and whether its
  // placement is done.
  const LoopPlan* plan() const { return plan_.get(); }
  bool Done() const { return done_.load(std::memory_order_acquire); }
  // Once done: the live blocks it placed around, and its placement (taken
  // once; the job is forgotten then).
  const std::vector<LiveBlock>& live() const { return live_; }
  absl::StatusOr<PlacementAround> Take();

 private:
  void Place(PlaceAroundOptions options);

  const bool background_;
  std::shared_ptr<const LoopPlan> plan_;
  std::vector<LiveBlock> live_;
  std::optional<absl::StatusOr<PlacementAround>> placed_;
  std::atomic<bool> done_{false};
  std::atomic<bool> cancel_{false};
  std::thread thread_;
};

}  // namespace tensormem::alloc_internal

#endif  // TENSORMEM_SRC_ALLOC_PLACEMENT_JOB_H_
