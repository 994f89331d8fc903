#include "alloc/planned_serving.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "absl/strings/str_format.h"

namespace tensormem::alloc_internal {
namespace {

// Calls are handed to the learner in chunks: one hand-over (a lock and a
// wake-up) per chunk. Small while learning has just begun, so that a short
// loop is found after a few iterations; then an eighth of what was logged
// since, so that hand-overs stay rare.
constexpr size_t kMinChunkEvents = 64;
constexpr size_t kMaxChunkEvents = 4096;

}  // namespace

PlannedServing::PlannedServing(BfcAllocator& fallback, bool background_planning,
                               uint64_t growth_allowance)
    : fallback_(fallback),
      growth_allowance_(growth_allowance),
      learner_(background_planning),
      placement_(background_planning) {
  pending_.reserve(kMaxChunkEvents);
}

PlannedServing::~PlannedServing() {
  for (void* chunk : arena_chunks_) fallback_.Deallocate(chunk);
}

void* PlannedServing::Allocate(const LoopEvent& request) {
  std::lock_guard lock(mutex_);
  if (plan_ == nullptr) MaybeTakeOver(&request);
  void* ptr = plan_ != nullptr ? ServeFromPlan(request) : nullptr;
  if (ptr == nullptr) {
    ptr = AllocateFromFallback(request);
    if (ptr == nullptr) {
      // Out of memory (or a bad request): the plan's order is broken.
      if (plan_ != nullptr) EndPlan();
      return nullptr;
    }
  }
  // Nothing is logged while a plan serves: the history starts again when it
  // ends.
  if (plan_ == nullptr) Log(request);
  if (steady_requested_)
    steady_requested_ = std::max(*steady_requested_, requested_);
  ++next_sequence_;
  return ptr;
}

void* PlannedServing::AllocateFromFallback(const LoopEvent& request) {
  void* ptr =
      fallback_.Allocate(request.value, request.alignment, request.stream);
  if (ptr == nullptr) return nullptr;
  const uint64_t bytes = fallback_.AllocatedSize(ptr).value_or(request.value);
  fallback_live_.emplace(ptr,
                         FallbackBlock{next_sequence_, request.value, bytes});
  Account(request.value, bytes);
  if (steady_pool_) {
    // The pool grows only here while a plan serves.
    steady_pool_ = std::max(*steady_pool_, fallback_.GetStats()->pool_bytes);
  }
  return ptr;
}

void* PlannedServing::ServeFromPlan(const LoopEvent& request) {
  const LoopPlan& plan = *plan_;
  if (position_ == plan.requests.size() &&
      (plan.shape.marked || !BeginIteration())) {
    EndPlan();  // an iteration longer than planned, or frees missing
    return nullptr;
  }
  const PlannedRequest& planned = plan.requests[position_];
  if (!planned.request.SameRequest(request)) {
    EndPlan();
    return nullptr;
  }
  if (++position_ == plan.requests.size()) CountWholeIteration();
  if (!planned.in_arena) return nullptr;
  // A block that wraps also waits for its previous instance, and may share
  // its place with blocks of the iteration before it is made.
  if (frontier_ < planned.frees_before ||
      (planned.wraps && live_position_[planned.slot] >= 0) ||
      (gates_live_ != 0 && Gated(position_ - 1)) ||
      (!guard_begin_.empty() && Guarded(position_ - 1))) {
    // A block planned to be freed by now is still live: its place may be
    // too. The fallback serves this one; its planned free counts as made.
    ++status_.late_frees;
    if (!planned.wraps) MarkFreed(planned.free_rank);
    return nullptr;
  }
  live_position_[planned.slot] = static_cast<int32_t>(position_ - 1);
  ++arena_live_;
  ++status_.arena_blocks;
  Account(request.value, planned.bytes);
  return arena_ + planned.offset;
}

bool PlannedServing::BeginIteration() {
  if (frontier_ != plan_->arena_frees) return false;
  position_ = 0;
  frontier_ = 0;
  iteration_counted_ = false;
  std::fill(freed_.begin(), freed_.end(), 0);
  return true;
}

void PlannedServing::CountWholeIteration() {
  // Every request made and every arena free in: the plan held for an
  // iteration.
  if (iteration_counted_ || position_ != plan_->requests.size() ||
      frontier_ != plan_->arena_frees) {
    return;
  }
  iteration_counted_ = true;
  status_.planned_iterations += plan_->iterations;
}

void PlannedServing::MarkFreed(uint32_t free_rank) {
  freed_[free_rank] = 1;
  // freed_ ends with a 0 that no free sets: the scan stops there.
  uint32_t frontier = frontier_;
  while (freed_[frontier] != 0) ++frontier;
  frontier_ = frontier;
  if (frontier == plan_->arena_frees) CountWholeIteration();
}

bool PlannedServing::FreeIfLive(void* ptr) {
  std::lock_guard lock(mutex_);
  return FreeLocked(ptr);
}

absl::Status PlannedServing::Deallocate(void* ptr) {
  std::lock_guard lock(mutex_);
  if (FreeLocked(ptr)) return absl::OkStatus();
  if (InArena(ptr)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "free of %p: not a live block (offset %d of the planned arena)", ptr,
        static_cast<char*>(ptr) - arena_));
  }
  // The fallback names the misuse (it never handed the pointer out either).
  return fallback_.CheckedDeallocate(ptr);
}

bool PlannedServing::FreeLocked(void* ptr) {
  // Placed in place, the arena's range also holds the fallback's blocks.
  // The free expected next is found inline (most frees); others look up.
  int32_t position = ExpectedFree(ptr);
  if (position < 0) position = ArenaPosition(ptr);
  if (position >= 0) {
    const PlannedRequest& planned = arena_plan_->requests[position];
    live_position_[planned.slot] = -1;
    --arena_live_;
    Unaccount(planned.request.value, planned.bytes);
    if (plan_ == nullptr) {
      Log({.kind = LoopEventKind::kFree, .value = kUnloggedBlock});
      ReleaseArena();
    } else if (!planned.wraps) {
      MarkFreed(planned.free_rank);
    }
    return true;
  }
  auto it = fallback_live_.find(ptr);
  if (it == fallback_live_.end()) return false;
  const FallbackBlock block = it->second;
  if (block.gate != kNoGate) {
    ReleaseGate(ptr, block.gate);
  } else if (!fallback_.CheckedDeallocate(ptr).ok()) {
    return false;
  }
  fallback_live_.erase(it);
  Unaccount(block.requested, block.bytes);
  if (plan_ == nullptr)
    Log({.kind = LoopEventKind::kFree, .value = block.sequence});
  return true;
}

int32_t PlannedServing::ExpectedFree(const void* ptr) const {
  // Frees come in the planned order as a rule: the one expected next needs
  // no lookup. A live arena block at its place can only be that block.
  if (plan_ == nullptr || frontier_ >= plan_->arena_frees) return -1;
  const uint32_t expected = plan_->free_order[frontier_];
  const PlannedRequest& planned = plan_->requests[expected];
  const bool live_here =
      arena_ + planned.offset == ptr &&
      live_position_[planned.slot] == static_cast<int32_t>(expected);
  return live_here ? static_cast<int32_t>(expected) : -1;
}

int32_t PlannedServing::ArenaPosition(const void* ptr) const {
  if (const int32_t expected = ExpectedFree(ptr); expected >= 0)
    return expected;
  if (!InArena(ptr)) return -1;
  const auto slot = arena_plan_->slot_of_offset.find(
      static_cast<uint64_t>(static_cast<const char*>(ptr) - arena_));
  if (slot == arena_plan_->slot_of_offset.end()) return -1;
  return live_position_[slot->second];
}

void PlannedServing::MarkIteration() {
  std::lock_guard lock(mutex_);
  if (plan_ == nullptr) {
    Log({.kind = LoopEventKind::kMark});
    MaybeTakeOver(/*request=*/nullptr);
    return;
  }
  if (!plan_->shape.marked) return;
  if (HalfWayThroughUnrolled(*plan_, position_)) return;
  if (position_ != plan_->requests.size() || !BeginIteration()) EndPlan();
}

void PlannedServing::MaybeTakeOver(const LoopEvent* request) {
  if (ready_ == nullptr) {
    if (!learner_.HasPlan()) return;
    ready_ = learner_.TakePlan();
    if (ready_ == nullptr) return;
    shadowed_ = -1;
  }
  const LoopShape& shape = ready_->shape;
  // A plan found from marks begins at a mark (not the one half way through
  // an unrolled plan); found from the period, at an allocation that begins
  // an iteration.
  const bool at_boundary =
      request == nullptr
          ? shape.marked &&
                !(shadowed_ >= 0 && HalfWayThroughUnrolled(*ready_, shadowed_))
          : !shape.marked && next_sequence_ >= shape.first_sequence &&
                (next_sequence_ - shape.first_sequence) % shape.period == 0;
  // The last plan's arena blocks must be gone first.
  if (at_boundary && shadowed_ == static_cast<int64_t>(shape.period) &&
      arena_live_ == 0) {
    ReleaseIdleArena();
    const TakeOverStep step = TakeOver(ready_);
    if (step != TakeOverStep::kWaiting) {
      if (step == TakeOverStep::kNoRoom) {
        ++status_.plans_without_room;
        learner_.Resume(LoopLearner::Outcome::kNoRoom, shape.key,
                        next_sequence_);
      }
      ready_ = nullptr;
      placement_.Stop();
      logged_since_learning_ = 0;
      return;
    }
    // Its placement in the pool is being made: follow this iteration too.
  }
  // A repetition inside an iteration (equal layers) looks like a loop until
  // it ends: the plan first follows one whole iteration without serving it
  // (again, when it could not take over yet), and is dropped at the first
  // request that differs.
  if (at_boundary) shadowed_ = 0;
  if (request != nullptr && shadowed_ >= 0 && !Shadow(*request)) {
    ++status_.plans_not_repeated;
    learner_.Resume(LoopLearner::Outcome::kNotALoop, shape.key, next_sequence_);
    ready_ = nullptr;
    placement_.Stop();
  }
}

bool PlannedServing::Shadow(const LoopEvent& request) {
  if (shadowed_ >= static_cast<int64_t>(ready_->requests.size()) ||
      !ready_->requests[shadowed_].request.SameRequest(request)) {
    return false;
  }
  ++shadowed_;
  return true;
}

void PlannedServing::EndPlan() {
  const bool held = status_.planned_iterations > iterations_before_plan_;
  learner_.Resume(
      held ? LoopLearner::Outcome::kChanged : LoopLearner::Outcome::kBroken,
      plan_->shape.key, next_sequence_);
  plan_ = nullptr;
  ++status_.mismatches;
  steady_pool_.reset();
  steady_requested_.reset();
  logged_since_learning_ = 0;
  ReleaseArena();
  // The plan's layout leaves the free memory in other places than the
  // fallback's would be: kept, it would make the fallback grow beside it
  // (on a real snapshot whose loop changed to larger requests, 158 MiB more
  // than tight under decommit:on_pressure). Given back, growth starts from
  // the blocks in use.
  fallback_.TrimFreeMemory();
}

void PlannedServing::Log(const LoopEvent& event) {
  pending_.push_back(event);
  ++logged_since_learning_;
  const size_t chunk =
      plan_ != nullptr ? kMaxChunkEvents
                       : std::clamp<size_t>(logged_since_learning_ / 8,
                                            kMinChunkEvents, kMaxChunkEvents);
  if (pending_.size() < chunk && event.kind != LoopEventKind::kMark) return;
  learner_.Submit(std::move(pending_));
  pending_.clear();
  pending_.reserve(kMaxChunkEvents);
}

void PlannedServing::Account(uint64_t requested, uint64_t bytes) {
  ++num_allocs_;
  in_use_ += bytes;
  requested_ += requested;
  peak_in_use_ = std::max(peak_in_use_, in_use_);
  largest_alloc_ = std::max(largest_alloc_, bytes);
}

void PlannedServing::Unaccount(uint64_t requested, uint64_t bytes) {
  in_use_ -= bytes;
  requested_ -= requested;
}

void PlannedServing::FillStats(AllocatorStats& stats) const {
  std::lock_guard lock(mutex_);
  stats.num_allocs = num_allocs_;
  stats.bytes_in_use = in_use_;
  stats.peak_bytes_in_use = peak_in_use_;
  stats.largest_alloc_size = largest_alloc_;
  stats.bytes_requested = requested_;
  stats.planned_iterations = status_.planned_iterations;
  // The steady state is reported once the plan held for an iteration.
  if (status_.planned_iterations > iterations_before_plan_) {
    stats.steady_peak_pool_bytes = steady_pool_;
    stats.steady_peak_bytes_requested = steady_requested_;
  }
  const LoopLearner::Plans found = learner_.plans();
  stats.loop_plans = AllocatorStats::LoopPlans{
      .found = found.built,
      .taken_over = status_.plans_taken_over,
      .without_room = status_.plans_without_room,
      .not_repeated = status_.plans_not_repeated,
      .waiting = ready_ != nullptr || found.ready ? 1 : 0};
}

void PlannedServing::ClearStats() {
  std::lock_guard lock(mutex_);
  num_allocs_ = 0;
  peak_in_use_ = in_use_;
  largest_alloc_ = 0;
}

std::optional<size_t> PlannedServing::RequestedSize(const void* ptr) const {
  std::lock_guard lock(mutex_);
  if (const int32_t position = ArenaPosition(ptr); position >= 0) {
    return arena_plan_->requests[position].request.value;
  }
  auto it = fallback_live_.find(ptr);
  if (it == fallback_live_.end()) return std::nullopt;
  return it->second.requested;
}

std::optional<size_t> PlannedServing::AllocatedSize(const void* ptr) const {
  std::lock_guard lock(mutex_);
  if (const int32_t position = ArenaPosition(ptr); position >= 0) {
    return arena_plan_->requests[position].bytes;
  }
  auto it = fallback_live_.find(ptr);
  if (it == fallback_live_.end()) return std::nullopt;
  return it->second.bytes;
}

PlannedAllocator::LoopStatus PlannedServing::Status() const {
  std::lock_guard lock(mutex_);
  PlannedAllocator::LoopStatus status = status_;
  status.plans_found = learner_.plans().built;
  status.serving = plan_ != nullptr;
  status.period =
      plan_ != nullptr ? plan_->shape.period / plan_->iterations : 0;
  status.iterations_per_plan =
      plan_ != nullptr ? static_cast<int>(plan_->iterations) : 0;
  status.arena_bytes = arena_plan_ != nullptr ? arena_plan_->arena_bytes : 0;
  return status;
}

}  // namespace tensormem::alloc_internal
