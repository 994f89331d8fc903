#include "tensormem/plan/solver/optimal_planner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "plan/solver/kept_offsets.h"
#include "plan/solver/local_moves.h"
#include "plan/solver/parallel_search.h"
#include "plan/solver/peak_pack.h"
#include "plan/solver/peak_split.h"
#include "plan/solver/problem.h"
#include "plan/solver/progress_line.h"
#include "plan/solver/solver_clock.h"
#include "plan/solver/start_plan.h"
#include "plan/solver/static_orders.h"
#include "plan/solver/windowed_orders.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/plan/usage_record.h"

namespace tensormem {
namespace {

using Clock = std::chrono::steady_clock;
using solver_internal::FeasibilityAnswer;
using solver_internal::Problem;
using solver_internal::ProgressLine;
using solver_internal::SearchOutcome;
using solver_internal::SolverClock;

// Beyond these the search's O(n^2) lists would not pay off alone: the
// large-set steps (windowed orders, repairs, local moves) run. Up to
// kMaxSearchAfterBuffers they take half the time, and the search the rest
// from their best plan: on a transformer's training recorded in bf16 (4,404
// buffers) they end at 1.0031x the bound, where the search reaches it; on
// two sets of about 7,100 buffers the search alone ended above them.
constexpr size_t kMaxSearchBuffers = 4096;
constexpr size_t kMaxSearchAfterBuffers = 8192;
constexpr uint64_t kMaxOverlapPairs = uint64_t{16} << 20;
// Below this the search over the whole set is quick enough: no split start.
constexpr size_t kMinSplitBuffers = 1024;
// The share of the time left that the pack start's steps get on large sets
// when its best fit is below the plan so far (the large-set steps after it
// place every buffer anew and lose the packing).
constexpr double kPackShare = 0.5;

double SecondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::max(0.0, std::chrono::duration<double>(to - from).count());
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(SolverClock::Now() - start).count();
}

absl::Status ValidateOptions(const OptimalPlanOptions& options) {
  if (!(options.time_limit_seconds >= 0) ||
      std::isinf(options.time_limit_seconds)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "time limit must be a finite number of seconds >= 0, got %g",
        options.time_limit_seconds));
  }
  if (options.threads < 1 || options.threads > 1024) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "threads must be in [1, 1024], got %d", options.threads));
  }
  if (options.alignment == 0)
    return absl::InvalidArgumentError("alignment must be positive, got 0");
  return absl::OkStatus();
}

uint64_t TotalSize(const BufferSet& set, const std::vector<uint64_t>& offsets) {
  uint64_t total = 0;
  for (size_t i = 0; i < set.buffers.size(); ++i) {
    if (set.buffers[i].size > 0)
      total = std::max(total, offsets[i] + set.buffers[i].size);
  }
  return total;
}

// The anytime minimisation (or, with a capacity, the feasibility loop) over
// the search. Updates `offsets` (per set buffer) and `result` as it improves.
//
// Each round first gives the bound the full node budget: tight sets reach it,
// and near the bound the search is no easier than at it. Then it bisects
// between the bound and the best plan with an eighth of the budget, moving up
// past targets that run out of nodes, until the targets meet the best plan;
// the next round doubles the budget.
class RoundSearch {
 public:
  RoundSearch(const BufferSet& set, const Problem& problem,
              const OptimalPlanOptions& options, Clock::time_point start,
              Clock::time_point deadline, std::vector<uint64_t>& offsets,
              OptimalPlanResult& result)
      : set_(set),
        problem_(problem),
        options_(options),
        start_(start),
        deadline_(deadline),
        offsets_(offsets),
        result_(result),
        best_(result.total_size),
        lowest_open_(result.lower_bound),
        node_limit_(solver_internal::RestartSchedule::FirstNodeLimit(
            problem.buffers.size())),
        schedule_(problem.buffers.size()),
        kept_(problem) {}

  absl::Status Run() {
    ProgressLine progress(options_.progress, start_);
    while (SolverClock::Now() < deadline_ && !Cancelled() &&
           best_ > result_.lower_bound) {
      const bool at_bound = first_in_round_ || options_.capacity.has_value();
      const uint64_t target = NextTarget(at_bound);
      first_in_round_ = false;
      const FeasibilityAnswer answer = Ask(target, at_bound);
      absl::StatusOr<bool> finished = Absorb(answer, target);
      if (!finished.ok() || *finished) return finished.status();
      if (options_.capacity.has_value() || lowest_open_ >= best_) NextRound();
      progress.Report(best_, result_.lower_bound, result_.nodes);
    }
    if (options_.capacity && best_ > *options_.capacity) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "no placement within capacity %d found in %g s (%d nodes); the best "
          "plan found needs %d",
          *options_.capacity, options_.time_limit_seconds, result_.nodes,
          best_));
    }
    return absl::OkStatus();
  }

 private:
  bool Cancelled() const {
    return options_.cancel != nullptr && options_.cancel->load();
  }

  // The capacity asked for, the bound at a round's start, else the middle
  // of the targets still open below the best plan.
  uint64_t NextTarget(bool at_bound) const {
    if (options_.capacity) return *options_.capacity;
    if (at_bound) return result_.lower_bound;
    return lowest_open_ + (best_ - 1 - lowest_open_) / 2;
  }

  // Runs the search at `target`: the full budget at the bound (resuming the
  // kept searches, since that question comes back every round), an eighth
  // of it above.
  FeasibilityAnswer Ask(uint64_t target, bool at_bound) {
    const solver_internal::FeasibilityRequest request{
        .capacity = target,
        .runs = schedule_.Runs(
            at_bound ? node_limit_ : std::max<uint64_t>(1000, node_limit_ / 8),
            /*resume=*/at_bound),
        .threads = options_.threads,
        .deadline = deadline_,
        .kept = at_bound ? &kept_ : nullptr,
        .cancel = options_.cancel};
    FeasibilityAnswer answer =
        solver_internal::RunFeasibility(problem_, request);
    schedule_.Record(request.runs, answer);
    result_.nodes += answer.nodes;
    return answer;
  }

  // Takes in the answer at `target`; true when the run is over (a fit within
  // the capacity), an error when the capacity is proven too small.
  absl::StatusOr<bool> Absorb(const FeasibilityAnswer& answer,
                              uint64_t target) {
    switch (answer.outcome) {
      case SearchOutcome::kFound:
        TakePlan(answer);
        return options_.capacity.has_value();
      case SearchOutcome::kInfeasible:
        if (options_.capacity) {
          return absl::FailedPreconditionError(
              absl::StrFormat("no placement fits in capacity %d: the search "
                              "proved it after %d nodes "
                              "(peak of live bytes %d)",
                              target, result_.nodes, problem_.peak_bytes));
        }
        result_.lower_bound = target + 1;
        lowest_open_ = std::max(lowest_open_, result_.lower_bound);
        return false;
      case SearchOutcome::kStopped:
        lowest_open_ = target + 1;
        return false;
    }
    return false;
  }

  void TakePlan(const FeasibilityAnswer& answer) {
    for (size_t i = 0; i < problem_.buffers.size(); ++i) {
      offsets_[problem_.source_index[i]] = answer.offsets[i];
    }
    best_ = TotalSize(set_, offsets_);
    result_.total_size = best_;
    result_.seconds_to_best = SecondsSince(start_);
    result_.method = "search";
  }

  void NextRound() {
    node_limit_ = std::min<uint64_t>(node_limit_ * 2, uint64_t{1} << 40);
    lowest_open_ = result_.lower_bound;
    first_in_round_ = true;
  }

  const BufferSet& set_;
  const Problem& problem_;
  const OptimalPlanOptions& options_;
  const Clock::time_point start_;
  const Clock::time_point deadline_;
  std::vector<uint64_t>& offsets_;
  OptimalPlanResult& result_;
  uint64_t best_;
  uint64_t lowest_open_;  // smallest target not yet tried this round
  uint64_t node_limit_;
  solver_internal::RestartSchedule schedule_;
  solver_internal::KeptSearches kept_;
  bool first_in_round_ = true;
};

// Sets too large to search, and sets with kept offsets (`fixed`, empty or
// one entry per record; the search moves every buffer): the windowed greedy
// orders and their repairs, then local moves on the best plan they found,
// until a plan is within the capacity if one is given. `result.method` names
// the last step that helped.
void ImproveLargeSet(const std::vector<UsageRecord<>>& records,
                     const OptimalPlanOptions& options, Clock::time_point start,
                     Clock::time_point deadline, std::vector<uint64_t>& offsets,
                     OptimalPlanResult& result,
                     const std::vector<uint8_t>& fixed) {
  const uint64_t alignment = options.alignment;
  auto take = [&](uint64_t total, Clock::time_point found_at,
                  const char* method) {
    if (total >= result.total_size) return;
    result.total_size = total;
    result.seconds_to_best =
        std::chrono::duration<double>(found_at - start).count();
    result.method = method;
  };
  // With a capacity, the first plan within it is enough.
  const uint64_t enough =
      std::max(result.lower_bound, options.capacity.value_or(0));
  const solver_internal::WindowedOrdersOutcome reordered =
      solver_internal::ImproveByWindowedOrders(
          records, alignment, offsets,
          {.deadline = deadline, .cancel = options.cancel},
          {.stop_at = enough, .threads = options.threads, .fixed = fixed});
  if (reordered.improved_at) {
    take(reordered.total, *reordered.improved_at,
         reordered.repaired ? "repaired_order" : "windowed_orders");
  }
  // Local moves look at the deadline only.
  if (result.total_size <= enough ||
      (options.cancel != nullptr && options.cancel->load()))
    return;
  const uint64_t moved = solver_internal::ImproveByLocalMoves(
      records, alignment, offsets, deadline, fixed);
  take(moved, SolverClock::Now(), "local_moves");
}

// A start built from the whole set (`method`: peak_split.h, peak_pack.h),
// taken when it ends below the best plan so far.
void TakeIfLower(const BufferSet& set, Clock::time_point start,
                 const char* method,
                 std::optional<std::vector<uint64_t>> candidate,
                 std::vector<uint64_t>& offsets, OptimalPlanResult& result) {
  if (!candidate) return;
  const uint64_t total = TotalSize(set, *candidate);
  if (total >= result.total_size) return;
  offsets = *std::move(candidate);
  result.total_size = total;
  result.seconds_to_best = SecondsSince(start);
  result.method = method;
}

// PlanOptimal on the clock its caller set (SolverClock).
absl::StatusOr<OptimalPlanResult> PlanOnTheSolverClock(
    const BufferSet& set, const OptimalPlanOptions& options) {
  const Clock::time_point start = SolverClock::Now();
  TM_RETURN_IF_ERROR(ValidateOptions(options));
  const Clock::time_point deadline =
      start +
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
          std::min(options.time_limit_seconds, 1e9)));
  TM_ASSIGN_OR_RETURN(Problem problem,
                      solver_internal::BuildProblem(set, options.alignment));
  TM_ASSIGN_OR_RETURN(std::vector<UsageRecord<>> records, ToUsageRecords(set));

  OptimalPlanResult result;
  result.lower_bound = problem.peak_bytes;
  std::vector<uint8_t> fixed;
  if (options.keep_given_offsets) {
    result.lower_bound = std::max(
        result.lower_bound, solver_internal::KeptOffsetsBound(set, fixed));
  }
  if (options.capacity && *options.capacity < result.lower_bound) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "capacity %d is below the peak of live bytes %d: no placement fits",
        *options.capacity, result.lower_bound));
  }
  TM_ASSIGN_OR_RETURN(std::vector<uint64_t> offsets,
                      solver_internal::StartOffsets(set, records, options));
  result.start_size = TotalSize(set, offsets);
  result.total_size = result.start_size;
  result.method = "start";
  result.seconds_to_best = SecondsSince(start);

  auto done = [&] {
    return result.total_size == result.lower_bound ||
           (options.capacity && result.total_size <= *options.capacity);
  };
  if (!done() && options.time_limit_seconds > 0 &&
      !options.keep_given_offsets && options.start_offsets.empty() &&
      set.buffers.size() >= kMinSplitBuffers) {
    TakeIfLower(set, start, "peak_split",
                solver_internal::SplitAtFirstPeak(
                    set, options, options.time_limit_seconds / 2),
                offsets, result);
  }
  if (!done() && options.time_limit_seconds > 0) {
    const size_t n = problem.buffers.size();
    const bool searchable =
        !options.keep_given_offsets && n <= kMaxSearchAfterBuffers &&
        solver_internal::CountOverlapPairs(problem) <= kMaxOverlapPairs;
    if (!searchable || n > kMaxSearchBuffers) {
      if (!options.keep_given_offsets) {
        TakeIfLower(
            set, start, "peak_pack",
            solver_internal::PackAtPeak(
                set, records, offsets, options,
                kPackShare * SecondsBetween(SolverClock::Now(), deadline)),
            offsets, result);
      }
      const Clock::time_point now = SolverClock::Now();
      ImproveLargeSet(records, options, start,
                      searchable ? now + (deadline - now) / 2 : deadline,
                      offsets, result, fixed);
    }
    if (searchable && !done()) {
      solver_internal::BuildOverlaps(problem);
      TM_RETURN_IF_ERROR(
          RoundSearch(set, problem, options, start, deadline, offsets, result)
              .Run());
    }
  }
  if (options.capacity && result.total_size > *options.capacity) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "no placement within capacity %d found in %g s; the best plan found "
        "needs %d",
        *options.capacity, options.time_limit_seconds, result.total_size));
  }
  result.proven_optimal = result.total_size == result.lower_bound;
  result.placed = set;
  for (size_t i = 0; i < set.buffers.size(); ++i)
    result.placed.buffers[i].offset = offsets[i];
  result.seconds = SecondsSince(start);
  return result;
}

}  // namespace

absl::StatusOr<OptimalPlanResult> PlanOptimal(
    const BufferSet& set, const OptimalPlanOptions& options) {
  // In counted time an outer call's count goes on (the large-set steps and
  // the starts plan parts of the set); otherwise this call counts its own.
  std::optional<solver_internal::CountedTime> own_count;
  if (options.counted_time && SolverClock::Counted() == nullptr)
    own_count.emplace();
  const solver_internal::CountedTimeScope clock(
      own_count ? &*own_count : SolverClock::Counted());
  return PlanOnTheSolverClock(set, options);
}

}  // namespace tensormem
