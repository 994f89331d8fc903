#include "alloc/placement_job.h"

#include <utility>

#include "absl/status/status.h"

namespace tensormem::alloc_internal {

PlacementJob::~PlacementJob() {
  Stop();
  for (auto& [thread, job] : dropped_) thread.join();
}

void PlacementJob::Start(std::shared_ptr<const LoopPlan> plan,
                         std::vector<LiveBlock> live,
                         PlaceAroundOptions options) {
  Stop();
  JoinFinished();
  job_ = std::make_shared<Job>();
  job_->plan = std::move(plan);
  job_->live = std::move(live);
  options.cancel = &job_->cancel;
  if (background_) {
    // The thread holds the job: it outlives a Stop.
    thread_ = std::thread([job = job_, options] { Place(*job, options); });
  } else {
    Place(*job_, options);
  }
}

void PlacementJob::Place(Job& job, PlaceAroundOptions options) {
  job.placed = PlaceAround(*job.plan, job.live, options);
  job.done.store(true, std::memory_order_release);
}

void PlacementJob::Stop() {
  if (job_ == nullptr) return;
  job_->cancel.store(true);
  if (thread_.joinable()) dropped_.emplace_back(std::move(thread_), job_);
  job_ = nullptr;
  JoinFinished();
}

void PlacementJob::JoinFinished() {
  for (size_t i = 0; i < dropped_.size();) {
    if (!dropped_[i].second->done.load(std::memory_order_acquire)) {
      ++i;
      continue;
    }
    dropped_[i].first.join();
    std::swap(dropped_[i], dropped_.back());
    dropped_.pop_back();
  }
}

absl::StatusOr<PlacementAround> PlacementJob::Take() {
  if (!Done()) return absl::FailedPreconditionError("no placement is done");
  absl::StatusOr<PlacementAround> placed = std::move(*job_->placed);
  Stop();
  return placed;
}

}  // namespace tensormem::alloc_internal
