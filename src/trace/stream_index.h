// StreamIndex: turns stream handles (pointers printed by CUDA, RMM, PyTorch)
// into the small integers a trace's `stream=` holds.
#ifndef TENSORMEM_SRC_TRACE_STREAM_INDEX_H_
#define TENSORMEM_SRC_TRACE_STREAM_INDEX_H_

#include <cstdint>

#include "absl/container/flat_hash_map.h"

namespace tensormem::trace_internal {

class StreamIndex {
 public:
  // Handle 0 (the default stream) is 0; other handles get 1, 2, ... in the
  // order they are first seen.
  int32_t IndexOf(uint64_t handle) {
    if (handle == 0) return 0;
    auto [it, inserted] =
        indices_.try_emplace(handle, static_cast<int32_t>(indices_.size() + 1));
    return it->second;
  }

 private:
  absl::flat_hash_map<uint64_t, int32_t> indices_;
};

}  // namespace tensormem::trace_internal

#endif  // TENSORMEM_SRC_TRACE_STREAM_INDEX_H_
