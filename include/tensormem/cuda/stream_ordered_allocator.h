// StreamOrderedAllocator: one device's BFC allocator shared safely by CUDA
// streams, without host synchronisation.
//
// A block freed on stream s may still be read by work queued on s. Reusing
// its memory on s is safe at once (s runs in order); on another stream t it
// is safe only after t waits for s's work up to the free. So Free records an
// event on s (cuEventRecord) and remembers it over the freed address range;
// Allocate on t makes t wait (cuStreamWaitEvent, a GPU-side wait) on every
// such event from another stream that overlaps the block it returns. A later
// free over the same memory supersedes the older events: its stream already
// waited on them when the block was handed out.
//
//   StreamOrderedAllocator allocator(std::move(bfc), driver, /*device=*/0);
//   void* a = allocator.Allocate(1 << 20, stream1);
//   allocator.Free(a, stream1);                      // event recorded on 1
//   void* b = allocator.Allocate(1 << 20, stream2);  // stream2 waits on it
#ifndef TENSORMEM_CUDA_STREAM_ORDERED_ALLOCATOR_H_
#define TENSORMEM_CUDA_STREAM_ORDERED_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/cuda/driver.h"

namespace tensormem {

class StreamOrderedAllocator {
 public:
  // `bfc` is `allocator` itself or the BFC allocator it serves from (the
  // planned policy's fallback): its upstream, failures and free regions.
  StreamOrderedAllocator(std::unique_ptr<Allocator> allocator,
                         BfcAllocator* bfc, CudaDriver* driver, int device);
  // Destroys the events it holds; the BFC allocator returns its memory.
  ~StreamOrderedAllocator();

  // A block of `bytes` usable on `stream`, or nullptr (see last_error() for
  // a driver failure, bfc().LastFailureReport() for out of memory).
  void* Allocate(size_t bytes, CUstream stream);
  // Frees a block after work queued on `stream` so far. Errors: a driver
  // failure (the block is then freed only after a host synchronisation of
  // `stream`) or a pointer the allocator does not own.
  absl::Status Free(void* ptr, CUstream stream);

  Allocator& allocator() { return *allocator_; }
  BfcAllocator& bfc() { return *bfc_; }
  int device() const { return device_; }
  int64_t events_recorded() const;
  int64_t cross_stream_waits() const;
  absl::Status last_error() const;

 private:
  struct PendingFree {
    uintptr_t end;
    CUstream stream;
    std::shared_ptr<CUevent> event;  // shared by the pieces of one free
  };

  // Removes [start, end) from the pending ranges, keeping what lies outside.
  void Forget(uintptr_t start, uintptr_t end);
  absl::StatusOr<CUevent> TakeEvent();
  std::shared_ptr<CUevent> Share(CUevent event);

  const std::unique_ptr<Allocator> allocator_;
  BfcAllocator* const bfc_;
  CudaDriver* const driver_;
  const int device_;
  mutable std::mutex mutex_;
  std::map<uintptr_t, PendingFree> pending_;  // by start; disjoint
  std::vector<CUevent> spare_events_;
  int64_t events_recorded_ = 0;
  int64_t cross_stream_waits_ = 0;
  absl::Status last_error_;
};

}  // namespace tensormem

#endif  // TENSORMEM_CUDA_STREAM_ORDERED_ALLOCATOR_H_
