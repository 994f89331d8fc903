#include "tensormem/trace/replay_allocator.h"

#include <utility>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "tensormem/core/status_macros.h"

namespace tensormem {

absl::StatusOr<ReplayTarget> CreateReplayTarget(const AllocatorSpec& spec) {
  BfcAllocatorOptions options;
  options.allow_retry_on_failure = false;
  options.log_failures = false;  // failures are counted and reported
  TM_ASSIGN_OR_RETURN(BuiltAllocator built,
                      CreateAllocator(spec, std::move(options)));
  ReplayTarget target;
  if (BfcAllocator* bfc = built.bfc) {
    target.base = bfc->upstream().BaseAddress();
    target.explain_failure = [bfc] { return bfc->LastFailureReport(); };
    target.dump = [bfc] { return bfc->RecordMemoryDump(); };
  }
  target.wrapped = std::move(built.wrapped);
  target.allocator = std::move(built.allocator);
  return target;
}

absl::StatusOr<ReplayMetrics> FastestTimedReplay(const PreparedTrace& trace,
                                                 const AllocatorSpec& spec,
                                                 int max_runs) {
  constexpr double kEnoughSeconds = 0.05;
  ReplayMetrics fastest;
  double measured = 0;
  for (int run = 0; run < max_runs && measured < kEnoughSeconds; ++run) {
    TM_ASSIGN_OR_RETURN(ReplayTarget target, CreateReplayTarget(spec));
    ReplayMetrics timing;
    TimeReplay(trace, target, timing);
    measured += timing.seconds;
    if (run == 0 || timing.ns_per_op < fastest.ns_per_op) fastest = timing;
  }
  return fastest;
}

absl::StatusOr<ReplayMetrics> FastestWarmReplay(const PreparedTrace& trace,
                                                const AllocatorSpec& spec,
                                                int warm_passes,
                                                int max_passes) {
  constexpr double kEnoughSeconds = 0.05;
  TM_ASSIGN_OR_RETURN(ReplayTarget target, CreateReplayTarget(spec));
  ReplayMetrics timing;
  for (int pass = 0; pass < warm_passes; ++pass)
    TimeReplay(trace, target, timing);
  ReplayMetrics fastest;
  double measured = 0;
  for (int pass = 0; pass < max_passes && measured < kEnoughSeconds; ++pass) {
    TimeReplay(trace, target, timing);
    measured += timing.seconds;
    if (pass == 0 || timing.ns_per_op < fastest.ns_per_op) fastest = timing;
  }
  return fastest;
}

void KeepFreedHeapPagesForTiming() {
#if defined(__GLIBC__)
  constexpr int kKeptBytes = 1 << 30;
  mallopt(M_TRIM_THRESHOLD, kKeptBytes);
  // Setting one threshold freezes glibc's adaptive mmap threshold at 128 KiB,
  // and every larger block (a growing chunk vector, a live-table slab) would
  // then be mapped afresh, and faulted in, on each run: the largest threshold
  // glibc takes keeps them in the heap as well.
  constexpr int kLargestMmapThreshold = 32 << 20;
  mallopt(M_MMAP_THRESHOLD, kLargestMmapThreshold);
#endif
}

}  // namespace tensormem
