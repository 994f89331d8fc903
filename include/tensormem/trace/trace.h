// Trace: an allocation workload as a sequence of alloc/free events.
//
// The in-memory form of the `.trace` text format (docs/design.md §3.1). Events
// are compact (no strings): tags live once in `tags` and events refer to them
// by index, so 10^7 events fit in a few hundred MB.
//
//   Trace trace;
//   trace.events.push_back(TraceEvent::Alloc(/*id=*/1, /*bytes=*/4096));
//   trace.events.push_back(TraceEvent::Free(1));
#ifndef TENSORMEM_TRACE_TRACE_H_
#define TENSORMEM_TRACE_TRACE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tensormem {

enum class TraceOp : uint8_t {
  kAlloc,
  kFree,
};

struct TraceEvent {
  static constexpr int64_t kNoTime = -1;
  static constexpr uint32_t kNoTag = 0;

  TraceOp op = TraceOp::kAlloc;
  // An allocation that already failed when the trace was recorded (e.g. an RMM
  // "allocate failure" row); replay counts it as a failed request.
  bool failed = false;
  uint32_t alignment = 0;  // 0: the allocator's default
  uint32_t tag = kNoTag;   // index into Trace::tags; 0 = no tag
  int32_t stream = 0;
  uint64_t id = 0;     // unique among live blocks; may be reused after free
  uint64_t bytes = 0;  // requested bytes (alloc only)
  int64_t time_ns = kNoTime;

  static TraceEvent Alloc(uint64_t id, uint64_t bytes) {
    TraceEvent event;
    event.op = TraceOp::kAlloc;
    event.id = id;
    event.bytes = bytes;
    return event;
  }
  static TraceEvent Free(uint64_t id) {
    TraceEvent event;
    event.op = TraceOp::kFree;
    event.id = id;
    return event;
  }
};

struct Trace {
  std::vector<TraceEvent> events;
  std::vector<std::string> tags = {""};  // tags[0] is "no tag"
  // Keys the format does not define, as written ("k=v k2=v2"), by event index
  // in increasing order. Kept so a conversion passes them on; usually empty.
  std::vector<std::pair<size_t, std::string>> extra_keys;
};

}  // namespace tensormem

#endif  // TENSORMEM_TRACE_TRACE_H_
