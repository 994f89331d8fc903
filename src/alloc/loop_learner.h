// LoopLearner: the planned allocator's learning half. It keeps the history of
// calls the allocator hands it, looks for a loop in it (FindLoop) and plans an
// iteration (BuildLoopPlan), on a thread of its own or, for reproducible runs,
// on the caller's; the allocator polls for the plan (HasPlan, TakePlan), so
// allocation never waits for planning in the background mode.
//
//   LoopLearner learner(/*background=*/true);
//   learner.Submit(std::move(events));  // cheap: hands the chunk over
//   if (learner.HasPlan()) std::shared_ptr<const LoopPlan> plan =
//       learner.TakePlan();
#ifndef TENSORMEM_SRC_ALLOC_LOOP_LEARNER_H_
#define TENSORMEM_SRC_ALLOC_LOOP_LEARNER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "alloc/loop_plan.h"

namespace tensormem::alloc_internal {

class LoopLearner {
 public:
  // The history keeps at most this many calls (the older half is dropped):
  // loops of up to half as many allocations and frees can be learnt.
  static constexpr size_t kMaxHistory = size_t{1} << 21;

  explicit LoopLearner(bool background);
  ~LoopLearner();  // stops the thread, dropping unplanned work
  LoopLearner(const LoopLearner&) = delete;
  LoopLearner& operator=(const LoopLearner&) = delete;

  // Appends calls to the history (in order, numbered from allocation 0).
  // Detection runs when enough arrived since the last try, or at a mark.
  void Submit(std::vector<LoopEvent> events);
  // Why a plan taken stopped serving (or never began). Nothing is logged
  // while a plan serves: after one that served, the history starts afresh
  // at allocation `next_sequence`.
  enum class Outcome {
    kNotALoop,  // an iteration followed did not match: never plan that loop
    kNoRoom,    // its arena could not be had without growing the pool:
                // never plan it again either (it would not fit better later)
    kBroken,    // it served, but not one whole iteration: never again
    kChanged,   // it held, then the program changed
  };
  void Resume(Outcome outcome, uint64_t key, uint64_t next_sequence);

  bool HasPlan() const { return has_plan_.load(std::memory_order_acquire); }
  // The plan found, once (nullptr when none). Until Resume nothing more is
  // planned: the plan is the caller's.
  std::shared_ptr<const LoopPlan> TakePlan();
  // Loops found and planned, and whether one of them waits to be taken:
  // read together, so that a plan being found is counted once.
  struct Plans {
    int64_t built = 0;
    bool ready = false;
  };
  Plans plans() const;

 private:
  void Run();  // the background thread
  // Appends `events`, then detects and plans when due; `lock` held on entry.
  void Absorb(std::vector<LoopEvent> events,
              std::unique_lock<std::mutex>& lock);
  void Trim();
  bool DetectionDue(bool marked) const;

  const bool background_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::vector<LoopEvent>> inbox_;  // background: not yet absorbed
  bool stop_ = false;
  bool serving_ = false;
  LoopHistory history_;
  size_t events_at_last_try_ = 0;
  absl::flat_hash_set<uint64_t> rejected_;
  std::shared_ptr<const LoopPlan> plan_;
  uint64_t generation_ = 0;  // Resume calls: plans found before one are void
  std::atomic<bool> has_plan_{false};
  int64_t plans_built_ = 0;
  std::thread thread_;  // last: started once the rest is ready
};

}  // namespace tensormem::alloc_internal

#endif  // TENSORMEM_SRC_ALLOC_LOOP_LEARNER_H_
