#include "alloc/loop_learner.h"

#include <algorithm>
#include <utility>

namespace tensormem::alloc_internal {
namespace {

// Detection reads the whole history: trying again only after a fraction of
// it arrived keeps its cost per call constant.
constexpr size_t kMinNewEvents = 32;
constexpr size_t kHistoryFractionPerTry = 8;
// In the background, the optimal planner may improve on best fit for this
// long (inline, best fit alone: the caller waits). Short: an allocator being
// destroyed waits for it.
constexpr double kSearchSeconds = 0.25;

}  // namespace

LoopLearner::LoopLearner(bool background) : background_(background) {
  if (background_) thread_ = std::thread([this] { Run(); });
}

LoopLearner::~LoopLearner() {
  if (!background_) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void LoopLearner::Submit(std::vector<LoopEvent> events) {
  std::unique_lock lock(mutex_);
  if (!background_) {
    Absorb(std::move(events), lock);
    return;
  }
  inbox_.push_back(std::move(events));
  lock.unlock();
  wake_.notify_one();
}

void LoopLearner::Resume(Outcome outcome, uint64_t key,
                         uint64_t next_sequence) {
  std::lock_guard lock(mutex_);
  if (outcome != Outcome::kChanged) rejected_.insert(key);
  if (outcome == Outcome::kChanged || outcome == Outcome::kBroken) {
    inbox_.clear();
    history_.events.clear();
    history_.first_sequence = next_sequence;
    events_at_last_try_ = 0;
  }
  serving_ = false;
  ++generation_;  // a plan being built now was found before this one ended
  plan_ = nullptr;
  has_plan_.store(false, std::memory_order_release);
}

std::shared_ptr<const LoopPlan> LoopLearner::TakePlan() {
  std::lock_guard lock(mutex_);
  has_plan_.store(false, std::memory_order_release);
  if (plan_ != nullptr) serving_ = true;
  return std::move(plan_);
}

LoopLearner::Plans LoopLearner::plans() const {
  std::lock_guard lock(mutex_);
  return {.built = plans_built_, .ready = plan_ != nullptr};
}

void LoopLearner::Run() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || !inbox_.empty(); });
    if (stop_) return;
    std::vector<std::vector<LoopEvent>> chunks = std::move(inbox_);
    inbox_.clear();
    for (std::vector<LoopEvent>& chunk : chunks) Absorb(std::move(chunk), lock);
  }
}

bool LoopLearner::DetectionDue(bool marked) const {
  if (serving_ || plan_ != nullptr) return false;
  if (marked) return true;
  const size_t fresh = history_.events.size() - events_at_last_try_;
  return fresh >= std::max(kMinNewEvents,
                           history_.events.size() / kHistoryFractionPerTry);
}

void LoopLearner::Absorb(std::vector<LoopEvent> events,
                         std::unique_lock<std::mutex>& lock) {
  const bool marked = std::any_of(events.begin(), events.end(), [](auto& e) {
    return e.kind == LoopEventKind::kMark;
  });
  history_.events.insert(history_.events.end(), events.begin(), events.end());
  Trim();
  if (!DetectionDue(marked)) return;
  events_at_last_try_ = history_.events.size();
  // Plan without the lock in the background, so Submit never waits; only
  // this thread and Resume change the history, so it is read from a copy.
  const absl::flat_hash_set<uint64_t> rejected = rejected_;
  const uint64_t generation = generation_;
  std::optional<LoopShape> shape;
  absl::StatusOr<LoopPlan> plan = absl::NotFoundError("no loop");
  if (background_) {
    const LoopHistory history = history_;
    lock.unlock();
    shape = FindLoop(history, rejected);
    if (shape) plan = BuildLoopPlan(history, *shape, kSearchSeconds);
    lock.lock();
  } else {
    shape = FindLoop(history_, rejected);
    if (shape) plan = BuildLoopPlan(history_, *shape);
  }
  if (!shape || generation != generation_) return;
  if (!plan.ok()) {
    rejected_.insert(shape->key);
    return;
  }
  ++plans_built_;
  plan_ = std::make_shared<const LoopPlan>(*std::move(plan));
  has_plan_.store(true, std::memory_order_release);
}

void LoopLearner::Trim() {
  if (history_.events.size() <= kMaxHistory) return;
  const size_t dropped = history_.events.size() - kMaxHistory / 2;
  const auto end = history_.events.begin() + static_cast<ptrdiff_t>(dropped);
  history_.first_sequence += std::count_if(
      history_.events.begin(), end,
      [](const LoopEvent& e) { return e.kind == LoopEventKind::kAlloc; });
  history_.events.erase(history_.events.begin(), end);
  events_at_last_try_ = 0;
}

}  // namespace tensormem::alloc_internal
