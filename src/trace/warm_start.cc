#include "trace/warm_start.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_format.h"

namespace tensormem::trace_internal {
namespace {

// A request size each pool serves: PyTorch's small pool takes up to 1 MiB.
constexpr size_t kSmallRequest = 1;
constexpr size_t kLargeRequest = (size_t{1} << 20) + 1;

}  // namespace

absl::StatusOr<std::vector<void*>> RebuildInitialState(
    BfcAllocator& bfc, RecordedSegmentUpstream& upstream,
    const PytorchRecording& recording, const PreparedTrace& trace) {
  for (const RecordedSegment& segment : recording.initial_segments) {
    upstream.PlaceNext(segment.address);
    const size_t request = segment.small ? kSmallRequest : kLargeRequest;
    if (!bfc.AddRegion(segment.bytes, request, segment.stream)) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "the segment at 0x%x (%d B) that existed before the first event "
          "does not fit under the memory limit",
          segment.address, segment.bytes));
    }
  }
  size_t live_at_start = 0;
  while (live_at_start < recording.entries.size() &&
         recording.entries[live_at_start] < 0) {
    ++live_at_start;
  }
  std::vector<size_t> order(live_at_start);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return recording.addresses[a] > recording.addresses[b];
  });
  std::vector<void*> placed(live_at_start, nullptr);
  for (const size_t event : order) {
    const PreparedTrace::Step& step = trace.steps()[event];
    const uint64_t address = recording.addresses[event];
    placed[event] = bfc.AllocateAt(reinterpret_cast<const void*>(address),
                                   step.bytes, step.stream);
    if (placed[event] == nullptr) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "event %d: the block of %d B live at 0x%x before the first event "
          "lies in no free part of a segment that existed then",
          event, step.bytes, address));
    }
  }
  return placed;
}

}  // namespace tensormem::trace_internal
