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
//   if (job.plan() == plan.get() && job.Done() && job.live() == live_now)
//     use(job.Take());
#ifndef TENSORMEM_SRC_ALLOC_PLACEMENT_JOB_H_
#define TENSORMEM_SRC_ALLOC_PLACEMENT_JOB_H_

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/loop_placement.h"
#include "alloc/loop_plan.h"

namespace tensormem::alloc_internal {

class PlacementJob {
 public:
  explicit PlacementJob(bool background) : background_(background) {}
  ~PlacementJob();  // waits for every placement still under way
  PlacementJob(const PlacementJob&) = delete;
  PlacementJob& operator=(const PlacementJob&) = delete;

  // Places `plan` around `live`, dropping any job under way first. Without
  // a thread of its own the placement is done when Start returns.
  void Start(std::shared_ptr<const LoopPlan> plan, std::vector<LiveBlock> live,
             PlaceAroundOptions options);
  // Forgets the job. A placement under way is told to stop and finishes on
  // its own: the caller does not wait for it.
  void Stop();

  // The plan of the job started last (null: none), and whether its
  // placement is done.
  const LoopPlan* plan() const { return job_ ? job_->plan.get() : nullptr; }
  bool Done() const {
    return job_ != nullptr && job_->done.load(std::memory_order_acquire);
  }
  // Once done: the live blocks it placed around, and its placement (taken
  // once; the job is forgotten then).
  const std::vector<LiveBlock>& live() const { return job_->live; }
  absl::StatusOr<PlacementAround> Take();

 private:
  // What a placement works on, shared with its thread.
  struct Job {
    std::shared_ptr<const LoopPlan> plan;
    std::vector<LiveBlock> live;
    std::optional<absl::StatusOr<PlacementAround>> placed;
    std::atomic<bool> done{false};
    std::atomic<bool> cancel{false};
  };
  static void Place(Job& job, PlaceAroundOptions options);
  // Joins the dropped placements that have finished.
  void JoinFinished();

  const bool background_;
  std::shared_ptr<Job> job_;
  std::thread thread_;
  // Dropped placements still finishing, each with its job.
  std::vector<std::pair<std::thread, std::shared_ptr<Job>>> dropped_;
};

}  // namespace tensormem::alloc_internal

#endif  // TENSORMEM_SRC_ALLOC_PLACEMENT_JOB_H_
