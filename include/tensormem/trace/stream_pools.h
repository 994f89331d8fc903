// Per-stream pools: what a trace with `stream=` costs when every stream
// reuses only its own frees (a caching allocator without cross-stream reuse),
// against one pool shared by all streams (StreamOrderedAllocator's model, in
// which a stream reuses another's memory after a GPU-side wait).
//
// Each stream gets its own allocator from the factory; so does the shared
// run. When a stream has to grow its pool, the free bytes sitting in the
// other streams' pools at that moment are "stranded": memory the process
// holds that this stream cannot use.
//
//   TM_ASSIGN_OR_RETURN(StreamPoolsResult result,
//                       SimulateStreamPools(trace, make_target));
//   std::cout << StreamPoolsToJson(result).dump(2);
#ifndef TENSORMEM_TRACE_STREAM_POOLS_H_
#define TENSORMEM_TRACE_STREAM_POOLS_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tensormem/trace/replay.h"
#include "tensormem/trace/trace.h"

namespace tensormem {

struct StreamPoolStats {
  int32_t stream = 0;
  int64_t allocs = 0;
  uint64_t peak_pool_bytes = 0;
};

struct StreamPoolsResult {
  std::vector<StreamPoolStats> streams;  // by stream number
  // Peak of the pool held by one allocator serving every stream.
  uint64_t shared_peak_pool_bytes = 0;
  // Peak of the sum of the per-stream pools.
  uint64_t per_stream_peak_pool_bytes = 0;
  // Largest amount free in other streams' pools when a stream had to grow.
  uint64_t peak_stranded_bytes = 0;
  // Growths for which another stream held a free block large enough.
  int64_t avoidable_growths = 0;
  int64_t failed_allocs_per_stream = 0;
  int64_t failed_allocs_shared = 0;
};

// Errors: the factory's, a free of an id that is not live (naming the event).
absl::StatusOr<StreamPoolsResult> SimulateStreamPools(
    const Trace& trace,
    const std::function<absl::StatusOr<ReplayTarget>()>& make_target);

nlohmann::json StreamPoolsToJson(const StreamPoolsResult& result);

}  // namespace tensormem

#endif  // TENSORMEM_TRACE_STREAM_POOLS_H_
