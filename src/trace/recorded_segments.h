// RecordedSegmentUpstream: a sub-allocator that puts each new region where a
// PyTorch recording put the segment it obtained at that point, so a replay
// sees the driver's addresses (best fit breaks ties between equal blocks by
// address, so they decide which block serves) and its segment events can be
// compared with the recording's, one by one.
//
// Addresses only: nothing is reserved or touched. A region the recording has
// no segment for (a model that diverged) comes from an address range above
// every recorded one, so it never overlaps.
//
// A capacity that changes over the recording (SetCapacity) refuses a region
// that would take the bytes held past the capacity at the current event, as
// the driver refused PyTorch when other users of the device held the rest.
#ifndef TENSORMEM_SRC_TRACE_RECORDED_SEGMENTS_H_
#define TENSORMEM_SRC_TRACE_RECORDED_SEGMENTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensormem/alloc/sub_allocator.h"
#include "tensormem/trace/pytorch_recording.h"
#include "tensormem/trace/snapshot_replay.h"

namespace tensormem::trace_internal {

class RecordedSegmentUpstream final : public SubAllocator {
 public:
  // `recording` must outlive the sub-allocator.
  explicit RecordedSegmentUpstream(const PytorchRecording& recording);

  // The replay is about to run trace event `event`: recorded segments of
  // earlier events can no longer be matched.
  void BeginEvent(size_t event);
  // The next region goes at `address` (a segment that existed before the
  // recording began), unless it overlaps a live one.
  void PlaceNext(uint64_t address) { placed_next_ = address; }
  // From each step's event on, at most its bytes held in all (steps in
  // event order; before the first step's event, the first's). No steps: no
  // bound but the allocator's limit.
  void SetCapacity(std::vector<SnapshotCapacityStep> steps) {
    capacity_ = std::move(steps);
  }
  // The segments obtained and returned since the last call (kAlloc / kFree,
  // `entry` and `before_event` unset), in order.
  std::vector<RecordedSegmentEvent> TakeLog();

  void* Alloc(size_t bytes, size_t alignment, size_t* bytes_received) override;
  void Free(void* ptr, size_t bytes) override;
  bool SupportsCoalescing() const override { return true; }
  MemoryKind GetMemoryKind() const override { return MemoryKind::kSimulated; }
  std::string Name() const override { return "recorded"; }

 private:
  // The recorded address for a region of `bytes` during the current event,
  // or 0 when the recording has none that fits.
  uint64_t MatchRecorded(uint64_t bytes);
  bool OverlapsLive(uint64_t address, uint64_t bytes) const;
  // Whether `bytes` more fit under the capacity at the current event.
  bool Fits(uint64_t bytes) const;

  const std::vector<RecordedSegmentEvent>& recorded_;
  size_t next_ = 0;  // first recorded segment event not yet used or passed
  size_t event_ = 0;
  std::map<uint64_t, uint64_t> live_;  // region start -> end
  uint64_t held_ = 0;                  // bytes of the live regions
  std::vector<SnapshotCapacityStep> capacity_;
  uint64_t fresh_ = 0;        // next address of a region the recording lacks
  uint64_t placed_next_ = 0;  // PlaceNext's address; 0: none
  std::vector<RecordedSegmentEvent> log_;
};

}  // namespace tensormem::trace_internal

#endif  // TENSORMEM_SRC_TRACE_RECORDED_SEGMENTS_H_
