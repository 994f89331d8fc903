// Internal to the snapshot replay: starting where a recording began. A
// snapshot keeps only its last events, so the caching allocator may already
// hold segments and blocks when the first one was recorded; the replay
// rebuilds them before it runs the events.
#ifndef TENSORMEM_SRC_TRACE_WARM_START_H_
#define TENSORMEM_SRC_TRACE_WARM_START_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/alloc/allocator.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/trace/pytorch_recording.h"
#include "tensormem/trace/replay.h"
#include "trace/recorded_segments.h"

namespace tensormem::trace_internal {

// The recording's initial segments, added at their addresses, and the
// blocks live before its first event (the trace's leading allocations,
// entry -1) placed at theirs, highest address first, so that each block's
// split sees the memory up to the next block as PyTorch's did. Returns
// those blocks in trace order. Errors name a block that lies in no free
// part of an initial segment, or a segment the limit refuses.
absl::StatusOr<std::vector<void*>> RebuildInitialState(
    BfcAllocator& bfc, RecordedSegmentUpstream& upstream,
    const PytorchRecording& recording, const PreparedTrace& trace);

// Hands out the rebuilt blocks for the trace's first allocations, in order,
// then forwards every call to `inner`.
class PrePlacedAllocator final : public Allocator {
 public:
  PrePlacedAllocator(Allocator& inner, std::vector<void*> placed)
      : inner_(inner), placed_(std::move(placed)) {}

  std::string Name() const override { return inner_.Name(); }
  std::optional<AllocatorStats> GetStats() const override {
    return inner_.GetStats();
  }
  bool ClearStats() override { return inner_.ClearStats(); }
  std::optional<size_t> RequestedSize(const void* ptr) const override {
    return inner_.RequestedSize(ptr);
  }
  std::optional<size_t> AllocatedSize(const void* ptr) const override {
    return inner_.AllocatedSize(ptr);
  }

 private:
  void* DoAllocate(size_t bytes, size_t alignment, int32_t stream) override {
    if (next_ < placed_.size()) return placed_[next_++];
    return inner_.Allocate(bytes, alignment, stream);
  }
  absl::Status DoDeallocate(void* ptr) override {
    return inner_.CheckedDeallocate(ptr);
  }

  Allocator& inner_;
  const std::vector<void*> placed_;
  size_t next_ = 0;
};

}  // namespace tensormem::trace_internal

#endif  // TENSORMEM_SRC_TRACE_WARM_START_H_
