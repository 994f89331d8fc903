// Building the allocator a replay runs into, from an allocator specification
// (allocator_spec.h), so `tensormem replay`, `report`, `bench` and `whatif`
// accept the same choices. The BFC allocator replays with retry-on-failure
// off: a replay is single-threaded, so no other thread's free could ever
// satisfy a waiting request.
//
//   AllocatorSpec spec;
//   spec.policy = "pytorch";
//   spec.memory_limit = 1 * kGiB;
//   TM_ASSIGN_OR_RETURN(ReplayTarget target, CreateReplayTarget(spec));
#ifndef TENSORMEM_TRACE_REPLAY_ALLOCATOR_H_
#define TENSORMEM_TRACE_REPLAY_ALLOCATOR_H_

#include "absl/status/statusor.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/trace/replay.h"

namespace tensormem {

// Errors: those of CreateAllocator.
absl::StatusOr<ReplayTarget> CreateReplayTarget(const AllocatorSpec& spec);

// Times the allocator calls alone (TimeReplay) on fresh allocators, repeated
// until 50 ms were measured or `max_runs` ran, so short traces are not just
// noise; returns the fastest run. Errors: those of CreateReplayTarget.
absl::StatusOr<ReplayMetrics> FastestTimedReplay(const PreparedTrace& trace,
                                                 const AllocatorSpec& spec,
                                                 int max_runs);

// The steady state a training loop sees: one allocator replays the trace
// `warm_passes` times untimed (each pass frees what it left), then timed
// passes run until 50 ms were measured or `max_passes` ran; returns the
// fastest. Errors: those of CreateReplayTarget.
absl::StatusOr<ReplayMetrics> FastestWarmReplay(const PreparedTrace& trace,
                                                const AllocatorSpec& spec,
                                                int warm_passes,
                                                int max_passes);

// For programs that time replays (the CLI, benchmarks), called once at start:
// the heap pages one run's allocator freed are kept for the next run instead
// of going back to the kernel. Otherwise a timed run on a new allocator may pay
// a page fault per page of its metadata (up to 4x the allocator's own time,
// depending on the heap's state), and the fastest run times the kernel.
// Process-wide (glibc's trim threshold); does nothing on other C libraries.
void KeepFreedHeapPagesForTiming();

}  // namespace tensormem

#endif  // TENSORMEM_TRACE_REPLAY_ALLOCATOR_H_
