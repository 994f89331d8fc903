// Replay: runs a trace through an allocator and measures what it cost.
//
// A trace is first prepared (ids resolved to dense slots, checked), then
// replayed: every alloc event calls Allocate, every free calls Deallocate. An
// allocation that fails is counted and the replay goes on; the free of that
// block is skipped. Metrics follow docs/design.md §4: live bytes (requested),
// in-use bytes (what the allocator reserved per block), pool bytes (held from
// the upstream), fragmentation = peak pool / peak live. Speed is measured in a
// separate pass that does nothing but the allocator calls.
//
//   TM_ASSIGN_OR_RETURN(PreparedTrace prepared, PreparedTrace::Prepare(trace));
//   TM_ASSIGN_OR_RETURN(ReplayTarget target, CreateReplayTarget(spec));
//   TM_ASSIGN_OR_RETURN(ReplayResult result, Replay(prepared, target, {}));
//   std::cout << ReplayMetricsToJson(result.metrics).dump();
#ifndef TENSORMEM_TRACE_REPLAY_H_
#define TENSORMEM_TRACE_REPLAY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tensormem/alloc/allocator.h"
#include "tensormem/alloc/memory_dump.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/trace/trace.h"

namespace tensormem {

// An allocator to replay into, with what reports need to know about it.
struct ReplayTarget {
  // Allocators `allocator` wraps, if it does not own them; declared first so
  // they are destroyed after it.
  std::vector<std::unique_ptr<Allocator>> wrapped;
  std::unique_ptr<Allocator> allocator;
  // Start of the address range blocks come from: offsets are address - base.
  // nullptr when blocks come from anywhere (offsets are then relative to the
  // lowest block address of the run).
  const void* base = nullptr;
  // Why the last allocation failed (free chunks and sizes); unset when the
  // allocator cannot say.
  std::function<std::string()> explain_failure;
  // A snapshot of regions, chunks and bins; unset when unsupported.
  std::function<MemoryDump()> dump;
};

// A trace with ids resolved to dense slots, ready to replay many times.
class PreparedTrace {
 public:
  enum class Op : uint8_t { kAlloc, kFree, kRecordedFailure };
  struct Step {
    Op op;
    uint32_t slot;
    uint32_t alignment;  // 0: the allocator's default
    int32_t stream;      // the event's stream= (kept in what was padding)
    uint64_t bytes;
  };

  // Checks that frees name live ids and allocations fresh ones; errors name
  // the event index ("event 12: free of id 5, which is not live").
  static absl::StatusOr<PreparedTrace> Prepare(const Trace& trace);

  const std::vector<Step>& steps() const { return steps_; }
  const std::vector<uint64_t>& ids() const { return ids_; }  // per step
  size_t slot_count() const { return slot_count_; }
  // Sum over time of requested bytes of live blocks, maximised; recorded
  // failures never count as live.
  uint64_t peak_live_bytes() const { return peak_live_bytes_; }

 private:
  std::vector<Step> steps_;
  std::vector<uint64_t> ids_;
  size_t slot_count_ = 0;
  uint64_t peak_live_bytes_ = 0;
};

// Told about every event of a replay, e.g. to act between events or to
// compare the allocator with a recording (snapshot_replay.h).
class ReplayObserver {
 public:
  virtual ~ReplayObserver() = default;
  virtual void BeforeEvent(size_t /*event*/) {}
  // `block`: what an allocation returned (nullptr when it failed, and for
  // frees and recorded failures).
  virtual void AfterEvent(size_t /*event*/, const void* /*block*/) {}
};

struct ReplayOptions {
  // Record, per alloc event, the block's offset and allocated size.
  bool record_offsets = false;
  // Record the placement of every block (for the placement chart).
  bool record_placement = false;
  // Memory timeline: at most this many samples (each the maximum over its
  // stretch of events, so peaks survive); 0 disables it.
  size_t max_timeline_samples = 0;
  // Explanations kept for the first failed allocations.
  size_t max_failure_reports = 4;
  ReplayObserver* observer = nullptr;  // not owned
};

struct ReplayMetrics {
  std::string allocator;
  int64_t events = 0;
  int64_t allocs = 0;         // allocations that succeeded
  int64_t frees = 0;          // frees performed
  int64_t failed_allocs = 0;  // including failures recorded in the trace
  int64_t recorded_failures = 0;
  int64_t skipped_frees = 0;  // frees of blocks whose allocation failed
  uint64_t peak_live_bytes = 0;
  uint64_t peak_in_use_bytes = 0;
  uint64_t peak_pool_bytes = 0;
  double fragmentation = 0;  // peak_pool / peak_live; 0 when nothing was live
  // Allocators that learn loops (the planned policy): whole iterations
  // served from a plan, and from the iteration the last plan took over, the
  // peak pool and the peak of live bytes; unset when no plan serves at the
  // end.
  int64_t planned_iterations = 0;
  std::optional<uint64_t> steady_pool_bytes;
  std::optional<uint64_t> steady_live_bytes;
  double seconds = 0;  // of the timing pass; 0 when not measured
  double ns_per_op = 0;
  std::optional<AllocatorStats> stats;  // the allocator's, at the end

  // Steady pool over steady live bytes; unset without both or with none live.
  std::optional<double> steady_ratio() const {
    if (!steady_pool_bytes || steady_live_bytes.value_or(0) == 0)
      return std::nullopt;
    return static_cast<double>(*steady_pool_bytes) / *steady_live_bytes;
  }
  // Without a steady state, why no plan served (from stats->loop_plans):
  // "no plan: no room", "no plan yet" or "no loop found"; "" when a plan
  // served, or broke in its first iteration, or the allocator learns no loops.
  std::string NoSteadyStateReason() const;
};

struct TimelineSample {
  int64_t event = 0;  // index of the last event of the stretch
  uint64_t live_bytes = 0;
  uint64_t in_use_bytes = 0;
  uint64_t pool_bytes = 0;
};

struct AllocationRecord {
  uint64_t id = 0;
  int64_t event = 0;
  uint64_t bytes = 0;                 // requested
  std::optional<uint64_t> offset;     // nullopt when the allocation failed
  std::optional<uint64_t> allocated;  // bytes reserved for the block
};

struct FailedAllocation {
  int64_t event = 0;
  uint64_t id = 0;
  uint64_t bytes = 0;
  uint64_t live_bytes = 0;  // live just before the request
  uint64_t pool_bytes = 0;
  std::string explanation{};  // the allocator's own, when it has one
  // The largest free chunks at that moment (offset, size), largest first.
  std::vector<std::pair<uint64_t, uint64_t>> largest_free_chunks{};
  uint64_t free_bytes = 0;  // total free inside the pool
};

struct ReplayResult {
  ReplayMetrics metrics;
  std::vector<TimelineSample> timeline;
  int64_t peak_live_event = -1;
  std::vector<AllocationRecord> allocations;  // with record_offsets
  BufferSet placement;  // with record_placement: lifetime in events, offset
  std::vector<FailedAllocation> failures;
};

// Replays into `target`. Errors: misuse reported by the allocator on free.
absl::StatusOr<ReplayResult> Replay(const PreparedTrace& trace,
                                    ReplayTarget& target,
                                    const ReplayOptions& options);

// Times the allocator calls alone on a fresh target (the trace's own blocks
// still live at the end are freed untimed). Fills seconds and ns_per_op.
void TimeReplay(const PreparedTrace& trace, ReplayTarget& target,
                ReplayMetrics& metrics);

// True when every allocation of the trace succeeds (stops at the first that
// does not).
bool ReplaysWithoutFailure(const PreparedTrace& trace, ReplayTarget& target);

// How a minimum limit was established. BFC-style allocators are not monotone
// in their limit (a larger limit can fail where a smaller one serves), so a
// bisection alone may land above the true minimum.
enum class MinLimitMethod {
  kExactScan,  // every 256 B step from peak live up was tried: exact
  kBisection,  // bisection only; assumes more memory never hurts
};
// "exact scan" or "bisection (assumes monotone)".
std::string_view MinLimitMethodName(MinLimitMethod method);

struct MinimumLimit {
  uint64_t limit_bytes = 0;  // multiple of kMinLimitPrecision
  double ratio = 0;          // limit / peak live
  int replays = 0;           // how many trial replays the search took
  MinLimitMethod method = MinLimitMethod::kBisection;
  uint64_t bisection_limit_bytes = 0;  // what the bisection alone reported
};
// Smallest memory limit, to 256-byte precision, at which `make_target(limit)`
// replays the trace with no failed allocation. First a bisection between peak
// live (no placement fits below it) and a limit that works (doubled from twice
// peak live); then, when the scan costs at most `scan_budget_events` replayed
// events (steps below the bisection's answer x trace events), every limit from
// peak live up is tried in 256 B steps and the first that serves is the exact
// answer. Otherwise the bisection's answer is returned as such (`method`).
// Errors: the factory's, or no working limit up to `max_limit`.
inline constexpr uint64_t kMinLimitPrecision = 256;
inline constexpr uint64_t kDefaultMinLimitScanBudget = 100'000'000;
absl::StatusOr<MinimumLimit> FindMinimumLimit(
    const PreparedTrace& trace,
    const std::function<absl::StatusOr<ReplayTarget>(uint64_t limit)>&
        make_target,
    uint64_t max_limit,
    uint64_t scan_budget_events = kDefaultMinLimitScanBudget);
// min_limit_bytes, min_limit_ratio, min_limit_method,
// min_limit_bisection_bytes, min_limit_replays.
nlohmann::json MinimumLimitToJson(const MinimumLimit& limit);

// design.md §3.4 keys; `stats` uses TensorFlow's names.
nlohmann::json AllocatorStatsToJson(const AllocatorStats& stats);
// The keys of allocators that learn loops, when set (planned_iterations and
// the steady state, loop_plans): part of AllocatorStatsToJson, and of any
// other statistics object that reports the planned policy.
void AddLoopStatsJson(const AllocatorStats& stats, nlohmann::json& json);
nlohmann::json ReplayMetricsToJson(const ReplayMetrics& metrics);

}  // namespace tensormem

#endif  // TENSORMEM_TRACE_REPLAY_H_
