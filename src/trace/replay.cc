#include "tensormem/trace/replay.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "absl/strings/str_format.h"

namespace tensormem {
namespace {

enum class SlotState : uint8_t { kEmpty, kLive, kZeroBytes, kFailed };

size_t AlignmentOf(const PreparedTrace::Step& step) {
  return step.alignment != 0 ? step.alignment : Allocator::kDefaultAlignment;
}

// The few largest free chunks of a dump, and the total free bytes.
void DescribeFreeChunks(const MemoryDump& dump, FailedAllocation& failure) {
  constexpr size_t kShown = 8;
  std::vector<std::pair<uint64_t, uint64_t>> chunks;
  for (const MemoryDump::Region& region : dump.regions) {
    for (const MemoryDump::Chunk& chunk : region.chunks) {
      if (chunk.in_use) continue;
      failure.free_bytes += chunk.size;
      chunks.emplace_back(chunk.offset, chunk.size);
    }
  }
  const size_t shown = std::min(kShown, chunks.size());
  std::partial_sort(
      chunks.begin(), chunks.begin() + shown, chunks.end(),
      [](const auto& a, const auto& b) { return a.second > b.second; });
  chunks.resize(shown);
  failure.largest_free_chunks = std::move(chunks);
}

// Builds timeline samples, each the maximum over `stride` events.
class TimelineRecorder {
 public:
  TimelineRecorder(size_t events, size_t max_samples)
      : stride_(max_samples == 0
                    ? 0
                    : std::max<size_t>(
                          1, (events + max_samples - 1) / max_samples)) {}

  bool enabled() const { return stride_ != 0; }

  void Observe(size_t event, size_t total_events, uint64_t live,
               uint64_t in_use, const Allocator& allocator,
               std::vector<TimelineSample>& out) {
    current_.live_bytes = std::max(current_.live_bytes, live);
    current_.in_use_bytes = std::max(current_.in_use_bytes, in_use);
    if ((event + 1) % stride_ != 0 && event + 1 != total_events) return;
    current_.event = static_cast<int64_t>(event);
    const std::optional<AllocatorStats> stats = allocator.GetStats();
    current_.pool_bytes =
        stats && stats->pool_bytes > 0 ? stats->pool_bytes : in_use;
    out.push_back(current_);
    current_ = TimelineSample{};
  }

 private:
  const size_t stride_;
  TimelineSample current_;
};

// One replay's state, one method per kind of event, so each step reads on
// its own.
class ReplayRun {
 public:
  ReplayRun(const PreparedTrace& trace, ReplayTarget& target,
            const ReplayOptions& options)
      : trace_(trace),
        target_(target),
        allocator_(*target.allocator),
        options_(options),
        blocks_(trace.slot_count(), nullptr),
        states_(trace.slot_count(), SlotState::kEmpty),
        in_use_sizes_(trace.slot_count(), 0),
        placement_index_(options.record_placement ? trace.slot_count() : 0),
        timeline_(trace.steps().size(), options.max_timeline_samples),
        base_(reinterpret_cast<uintptr_t>(target.base)) {
    result_.metrics.allocator = allocator_.Name();
    result_.metrics.events = static_cast<int64_t>(trace.steps().size());
  }

  absl::StatusOr<ReplayResult> Run() {
    const std::vector<PreparedTrace::Step>& steps = trace_.steps();
    for (size_t e = 0; e < steps.size(); ++e) {
      const PreparedTrace::Step& step = steps[e];
      const uint64_t id = trace_.ids()[e];
      if (options_.observer != nullptr) options_.observer->BeforeEvent(e);
      if (step.op == PreparedTrace::Op::kRecordedFailure) {
        OnRecordedFailure(e, id, step);
      } else if (step.op == PreparedTrace::Op::kAlloc) {
        OnAlloc(e, id, step);
      } else if (absl::Status freed = OnFree(e, id, step); !freed.ok()) {
        return freed;
      }
      if (options_.observer != nullptr) {
        options_.observer->AfterEvent(e, step.op == PreparedTrace::Op::kAlloc
                                             ? blocks_[step.slot]
                                             : nullptr);
      }
      Observe(e);
    }
    Finish();
    return std::move(result_);
  }

 private:
  void OnRecordedFailure(size_t e, uint64_t id,
                         const PreparedTrace::Step& step) {
    ++result_.metrics.failed_allocs;
    ++result_.metrics.recorded_failures;
    if (options_.record_offsets) {
      result_.allocations.push_back(
          {id, static_cast<int64_t>(e), step.bytes, {}, {}});
    }
  }

  void OnAlloc(size_t e, uint64_t id, const PreparedTrace::Step& step) {
    void* block =
        allocator_.Allocate(step.bytes, AlignmentOf(step), step.stream);
    AllocationRecord record{id, static_cast<int64_t>(e), step.bytes, {}, {}};
    if (block == nullptr && step.bytes == 0) {
      ++result_.metrics.allocs;  // nothing to hand out is not a failure
      states_[step.slot] = SlotState::kZeroBytes;
    } else if (block == nullptr) {
      ++result_.metrics.failed_allocs;
      states_[step.slot] = SlotState::kFailed;
      ReportFailure(e, id, step);
    } else {
      Place(e, id, step, block, record);
    }
    if (options_.record_offsets) result_.allocations.push_back(record);
  }

  // A failed allocation, explained while the allocator is in that state.
  void ReportFailure(size_t e, uint64_t id, const PreparedTrace::Step& step) {
    if (result_.failures.size() >= options_.max_failure_reports) return;
    FailedAllocation failure{static_cast<int64_t>(e), id, step.bytes, live_};
    const std::optional<AllocatorStats> stats = allocator_.GetStats();
    failure.pool_bytes = stats ? stats->pool_bytes : 0;
    if (target_.explain_failure)
      failure.explanation = target_.explain_failure();
    if (target_.dump) DescribeFreeChunks(target_.dump(), failure);
    result_.failures.push_back(std::move(failure));
  }

  void Place(size_t e, uint64_t id, const PreparedTrace::Step& step,
             void* block, AllocationRecord& record) {
    ++result_.metrics.allocs;
    blocks_[step.slot] = block;
    states_[step.slot] = SlotState::kLive;
    const uint64_t reserved =
        allocator_.AllocatedSize(block).value_or(step.bytes);
    in_use_sizes_[step.slot] = reserved;
    live_ += step.bytes;
    in_use_ += reserved;
    const uintptr_t address = reinterpret_cast<uintptr_t>(block);
    lowest_address_ = std::min(lowest_address_, address);
    record.offset = address - base_;  // rebased in Finish when there is no base
    record.allocated = reserved;
    if (options_.record_placement) {
      placement_index_[step.slot] = result_.placement.buffers.size();
      result_.placement.buffers.push_back(
          {.id = id,
           .lower = static_cast<int64_t>(e),
           .upper = static_cast<int64_t>(trace_.steps().size()),
           .size = step.bytes,
           .offset = address - base_});
    }
  }

  absl::Status OnFree(size_t e, uint64_t id, const PreparedTrace::Step& step) {
    switch (states_[step.slot]) {
      case SlotState::kFailed:
        ++result_.metrics.skipped_frees;
        break;
      case SlotState::kZeroBytes:
        ++result_.metrics.frees;
        break;
      case SlotState::kLive:
        if (absl::Status freed = FreeLive(e, id, step); !freed.ok()) {
          return freed;
        }
        break;
      case SlotState::kEmpty:
        return absl::InternalError(absl::StrFormat(
            "event %d: free of id %d before its allocation", e, id));
    }
    blocks_[step.slot] = nullptr;
    states_[step.slot] = SlotState::kEmpty;
    return absl::OkStatus();
  }

  absl::Status FreeLive(size_t e, uint64_t id,
                        const PreparedTrace::Step& step) {
    const absl::Status status =
        allocator_.CheckedDeallocate(blocks_[step.slot]);
    if (!status.ok()) {
      return absl::InternalError(absl::StrFormat("event %d: free of id %d: %s",
                                                 e, id, status.message()));
    }
    ++result_.metrics.frees;
    live_ -= step.bytes;
    in_use_ -= in_use_sizes_[step.slot];
    if (options_.record_placement) {
      result_.placement.buffers[placement_index_[step.slot]].upper =
          static_cast<int64_t>(e);
    }
    return absl::OkStatus();
  }

  // Peaks and the timeline after event `e`.
  void Observe(size_t e) {
    ReplayMetrics& metrics = result_.metrics;
    if (live_ > metrics.peak_live_bytes) {
      metrics.peak_live_bytes = live_;
      result_.peak_live_event = static_cast<int64_t>(e);
    }
    metrics.peak_in_use_bytes = std::max(metrics.peak_in_use_bytes, in_use_);
    if (timeline_.enabled()) {
      timeline_.Observe(e, trace_.steps().size(), live_, in_use_, allocator_,
                        result_.timeline);
    }
  }

  void Finish() {
    // Without a base, offsets are relative to the lowest block of the run.
    if (base_ == 0 &&
        lowest_address_ != std::numeric_limits<uintptr_t>::max()) {
      for (AllocationRecord& record : result_.allocations) {
        if (record.offset) *record.offset -= lowest_address_;
      }
      for (Buffer& buffer : result_.placement.buffers) {
        *buffer.offset -= lowest_address_;
      }
    }
    ReplayMetrics& metrics = result_.metrics;
    metrics.stats = allocator_.GetStats();
    uint64_t sampled_pool = 0;
    for (const TimelineSample& sample : result_.timeline) {
      sampled_pool = std::max(sampled_pool, sample.pool_bytes);
    }
    metrics.peak_pool_bytes = std::max(
        sampled_pool, metrics.stats ? metrics.stats->peak_pool_bytes : 0);
    // An allocator without a pool of its own holds exactly what it hands out.
    if (metrics.peak_pool_bytes == 0) {
      metrics.peak_pool_bytes = metrics.peak_in_use_bytes;
    }
    metrics.fragmentation = metrics.peak_live_bytes == 0
                                ? 0
                                : static_cast<double>(metrics.peak_pool_bytes) /
                                      metrics.peak_live_bytes;
    if (metrics.stats) {
      metrics.planned_iterations = metrics.stats->planned_iterations;
      metrics.steady_pool_bytes = metrics.stats->steady_peak_pool_bytes;
      metrics.steady_live_bytes = metrics.stats->steady_peak_bytes_requested;
    }
  }

  const PreparedTrace& trace_;
  ReplayTarget& target_;
  Allocator& allocator_;
  const ReplayOptions& options_;
  ReplayResult result_;
  std::vector<void*> blocks_;
  std::vector<SlotState> states_;
  std::vector<uint64_t> in_use_sizes_;
  std::vector<size_t> placement_index_;
  TimelineRecorder timeline_;
  const uintptr_t base_;
  uintptr_t lowest_address_ = std::numeric_limits<uintptr_t>::max();
  uint64_t live_ = 0;
  uint64_t in_use_ = 0;
};

}  // namespace

absl::StatusOr<ReplayResult> Replay(const PreparedTrace& trace,
                                    ReplayTarget& target,
                                    const ReplayOptions& options) {
  return ReplayRun(trace, target, options).Run();
}

void TimeReplay(const PreparedTrace& trace, ReplayTarget& target,
                ReplayMetrics& metrics) {
  Allocator& allocator = *target.allocator;
  const std::vector<PreparedTrace::Step>& steps = trace.steps();
  std::vector<void*> blocks(trace.slot_count(), nullptr);
  int64_t operations = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const PreparedTrace::Step& step : steps) {
    if (step.op == PreparedTrace::Op::kAlloc) {
      blocks[step.slot] =
          allocator.Allocate(step.bytes, AlignmentOf(step), step.stream);
      ++operations;
    } else if (step.op == PreparedTrace::Op::kFree) {
      allocator.Deallocate(blocks[step.slot]);  // nullptr (failed block): no-op
      blocks[step.slot] = nullptr;
      ++operations;
    }
  }
  const auto stop = std::chrono::steady_clock::now();
  for (void* block : blocks) allocator.Deallocate(block);
  metrics.seconds = std::chrono::duration<double>(stop - start).count();
  metrics.ns_per_op = operations == 0 ? 0 : metrics.seconds * 1e9 / operations;
}

bool ReplaysWithoutFailure(const PreparedTrace& trace, ReplayTarget& target) {
  Allocator& allocator = *target.allocator;
  std::vector<void*> blocks(trace.slot_count(), nullptr);
  bool ok = true;
  for (const PreparedTrace::Step& step : trace.steps()) {
    if (step.op == PreparedTrace::Op::kAlloc) {
      blocks[step.slot] =
          allocator.Allocate(step.bytes, AlignmentOf(step), step.stream);
      if (blocks[step.slot] == nullptr && step.bytes != 0) {
        ok = false;
        break;
      }
    } else if (step.op == PreparedTrace::Op::kFree) {
      allocator.Deallocate(blocks[step.slot]);
      blocks[step.slot] = nullptr;
    }
  }
  for (void* block : blocks) allocator.Deallocate(block);
  return ok;
}

}  // namespace tensormem
