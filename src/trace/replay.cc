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

}  // namespace

absl::StatusOr<ReplayResult> Replay(const PreparedTrace& trace,
                                    ReplayTarget& target,
                                    const ReplayOptions& options) {
  Allocator& allocator = *target.allocator;
  const std::vector<PreparedTrace::Step>& steps = trace.steps();
  ReplayResult result;
  ReplayMetrics& metrics = result.metrics;
  metrics.allocator = allocator.Name();
  metrics.events = static_cast<int64_t>(steps.size());

  std::vector<void*> blocks(trace.slot_count(), nullptr);
  std::vector<SlotState> states(trace.slot_count(), SlotState::kEmpty);
  std::vector<uint64_t> in_use_sizes(trace.slot_count(), 0);
  std::vector<size_t> placement_index(
      options.record_placement ? trace.slot_count() : 0);
  TimelineRecorder timeline(steps.size(), options.max_timeline_samples);
  const uintptr_t base = reinterpret_cast<uintptr_t>(target.base);
  uintptr_t lowest_address = std::numeric_limits<uintptr_t>::max();
  uint64_t live = 0, in_use = 0;

  for (size_t e = 0; e < steps.size(); ++e) {
    const PreparedTrace::Step& step = steps[e];
    const uint64_t id = trace.ids()[e];
    if (step.op == PreparedTrace::Op::kRecordedFailure) {
      ++metrics.failed_allocs;
      ++metrics.recorded_failures;
      if (options.record_offsets) {
        result.allocations.push_back(
            {id, static_cast<int64_t>(e), step.bytes, {}, {}});
      }
    } else if (step.op == PreparedTrace::Op::kAlloc) {
      void* block = allocator.Allocate(step.bytes, AlignmentOf(step), step.stream);
      AllocationRecord record{id, static_cast<int64_t>(e), step.bytes, {}, {}};
      if (block == nullptr && step.bytes == 0) {
        ++metrics.allocs;  // nothing to hand out is not a failure
        states[step.slot] = SlotState::kZeroBytes;
      } else if (block == nullptr) {
        ++metrics.failed_allocs;
        states[step.slot] = SlotState::kFailed;
        if (result.failures.size() < options.max_failure_reports) {
          FailedAllocation failure{static_cast<int64_t>(e), id, step.bytes,
                                   live};
          const std::optional<AllocatorStats> stats = allocator.GetStats();
          failure.pool_bytes = stats ? stats->pool_bytes : 0;
          if (target.explain_failure)
            failure.explanation = target.explain_failure();
          if (target.dump) DescribeFreeChunks(target.dump(), failure);
          result.failures.push_back(std::move(failure));
        }
      } else {
        ++metrics.allocs;
        blocks[step.slot] = block;
        states[step.slot] = SlotState::kLive;
        const uint64_t reserved =
            allocator.AllocatedSize(block).value_or(step.bytes);
        in_use_sizes[step.slot] = reserved;
        live += step.bytes;
        in_use += reserved;
        const uintptr_t address = reinterpret_cast<uintptr_t>(block);
        lowest_address = std::min(lowest_address, address);
        record.offset = address - base;  // rebased below when there is no base
        record.allocated = reserved;
        if (options.record_placement) {
          placement_index[step.slot] = result.placement.buffers.size();
          result.placement.buffers.push_back(
              {.id = id,
               .lower = static_cast<int64_t>(e),
               .upper = static_cast<int64_t>(steps.size()),
               .size = step.bytes,
               .offset = address - base});
        }
      }
      if (options.record_offsets) result.allocations.push_back(record);
    } else {
      switch (states[step.slot]) {
        case SlotState::kFailed:
          ++metrics.skipped_frees;
          break;
        case SlotState::kZeroBytes:
          ++metrics.frees;
          break;
        case SlotState::kLive: {
          const absl::Status status =
              allocator.CheckedDeallocate(blocks[step.slot]);
          if (!status.ok()) {
            return absl::InternalError(absl::StrFormat(
                "event %d: free of id %d: %s", e, id, status.message()));
          }
          ++metrics.frees;
          live -= step.bytes;
          in_use -= in_use_sizes[step.slot];
          if (options.record_placement) {
            result.placement.buffers[placement_index[step.slot]].upper =
                static_cast<int64_t>(e);
          }
          break;
        }
        case SlotState::kEmpty:
          return absl::InternalError(absl::StrFormat(
              "event %d: free of id %d before its allocation", e, id));
      }
      blocks[step.slot] = nullptr;
      states[step.slot] = SlotState::kEmpty;
    }
    if (live > metrics.peak_live_bytes) {
      metrics.peak_live_bytes = live;
      result.peak_live_event = static_cast<int64_t>(e);
    }
    metrics.peak_in_use_bytes = std::max(metrics.peak_in_use_bytes, in_use);
    if (timeline.enabled())
      timeline.Observe(e, steps.size(), live, in_use, allocator,
                       result.timeline);
  }

  // Without a base, offsets are relative to the lowest block of the run.
  if (base == 0 && lowest_address != std::numeric_limits<uintptr_t>::max()) {
    for (AllocationRecord& record : result.allocations) {
      if (record.offset) *record.offset -= lowest_address;
    }
    for (Buffer& buffer : result.placement.buffers)
      *buffer.offset -= lowest_address;
  }
  metrics.stats = allocator.GetStats();
  uint64_t sampled_pool = 0;
  for (const TimelineSample& sample : result.timeline) {
    sampled_pool = std::max(sampled_pool, sample.pool_bytes);
  }
  metrics.peak_pool_bytes = std::max(
      sampled_pool, metrics.stats ? metrics.stats->peak_pool_bytes : 0);
  // An allocator without a pool of its own holds exactly what it hands out.
  if (metrics.peak_pool_bytes == 0)
    metrics.peak_pool_bytes = metrics.peak_in_use_bytes;
  metrics.fragmentation = metrics.peak_live_bytes == 0
                              ? 0
                              : static_cast<double>(metrics.peak_pool_bytes) /
                                    metrics.peak_live_bytes;
  return result;
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
      blocks[step.slot] = allocator.Allocate(step.bytes, AlignmentOf(step), step.stream);
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
      blocks[step.slot] = allocator.Allocate(step.bytes, AlignmentOf(step), step.stream);
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
