#include "alloc/placement_job.h"

#include <utility>

#include "absl/status/status.h"

namespace tensormem::alloc_internal {

void PlacementJob::Start(std::shared_ptr<const LoopPlan> plan,
                         std::vector<LiveBlock> live,
                         PlaceAroundOptions options) {
  Stop();
  plan_ = std::move(plan);
  live_ = std::move(live);
  options.cancel = &cancel_;
  if (background_) {
    thread_ = std::thread([this, options] { Place(options); });
  } else {
    Place(options);
  }
}

void PlacementJob::Place(PlaceAroundOptions options) {
  placed_ = PlaceAround(*plan_, live_, options);
  done_.store(true, std::memory_order_release);
}

void PlacementJob::Stop() {
  cancel_.store(true);
  if (thread_.joinable()) thread_.join();
  cancel_.store(false);
  done_.store(false);
  placed_.reset();
  plan_ = nullptr;
  live_.clear();
}

absl::StatusOr<PlacementAround> PlacementJob::Take() {
  absl::StatusOr<PlacementAround> placed =
      placed_ ? std::move(*placed_)
              : absl::FailedPreconditionError("no placement is done");
  Stop();
  return placed;
}

}  // namespace tensormem::alloc_internal
