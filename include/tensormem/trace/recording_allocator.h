// TraceRecordingAllocator: wraps any Allocator and writes a `.trace` of every
// allocation and free as the program runs, to replay it later.
//
// Thread-safe. Each allocation gets the next id of a counter; a free finds its
// id by pointer. `stream=` holds a small per-thread index (0 for the first
// thread that calls in, 1 for the next, ...), `t=` the nanoseconds since the
// recorder was created, and `align=` any alignment other than the default.
// A request the wrapped allocator cannot serve is recorded with `failed=1`.
//
//   absl::StatusOr<std::unique_ptr<TraceWriter>> writer =
//       TraceWriter::Open("run.trace.gz");
//   TraceRecordingAllocator recorder(bfc, **writer);
//   void* p = recorder.Allocate(1 << 20);  // "a 0 1048576 t=..."
//   recorder.Deallocate(p);                // "f 0 t=..."
//   absl::Status written = (*writer)->Close();
#ifndef TENSORMEM_TRACE_RECORDING_ALLOCATOR_H_
#define TENSORMEM_TRACE_RECORDING_ALLOCATOR_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "tensormem/alloc/allocator.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem {

class TraceRecordingAllocator : public Allocator {
 public:
  // `wrapped` serves the requests, `writer` receives the events; both must
  // outlive the recorder.
  TraceRecordingAllocator(Allocator& wrapped, TraceWriter& writer);

  std::string Name() const override { return wrapped_.Name(); }
  std::optional<AllocatorStats> GetStats() const override {
    return wrapped_.GetStats();
  }
  bool ClearStats() override { return wrapped_.ClearStats(); }
  std::optional<size_t> RequestedSize(const void* ptr) const override {
    return wrapped_.RequestedSize(ptr);
  }
  std::optional<size_t> AllocatedSize(const void* ptr) const override {
    return wrapped_.AllocatedSize(ptr);
  }

  // Number of events written so far.
  uint64_t events_recorded() const ABSL_LOCKS_EXCLUDED(mutex_);

 private:
  void* DoAllocate(size_t bytes, size_t alignment, int32_t stream) override;
  absl::Status DoDeallocate(void* ptr) override;

  int64_t NanosSinceStart() const;
  int32_t StreamOfThisThread() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  Allocator& wrapped_;
  const std::chrono::steady_clock::time_point start_;

  // std::mutex rather than absl::Mutex: Debian's Abseil is built without
  // ThreadSanitizer hooks, so TSan could not see absl::Mutex's ordering.
  mutable std::mutex mutex_;
  TraceWriter& writer_ ABSL_GUARDED_BY(mutex_);
  uint64_t next_id_ ABSL_GUARDED_BY(mutex_) = 0;
  uint64_t events_recorded_ ABSL_GUARDED_BY(mutex_) = 0;
  absl::flat_hash_map<const void*, uint64_t> live_ids_ ABSL_GUARDED_BY(mutex_);
  absl::flat_hash_map<std::thread::id, int32_t> streams_
      ABSL_GUARDED_BY(mutex_);
};

}  // namespace tensormem

#endif  // TENSORMEM_TRACE_RECORDING_ALLOCATOR_H_
