// BfcAllocator's thread pools, shared by the allocator's files
// (bfc_thread_pools.cc makes and finds them; bfc_allocator.cc sums over them).
#ifndef TENSORMEM_SRC_ALLOC_BFC_THREAD_POOLS_H_
#define TENSORMEM_SRC_ALLOC_BFC_THREAD_POOLS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "tensormem/alloc/bfc_allocator.h"

namespace tensormem {

struct BfcAllocator::ThreadPools {
  static constexpr int kMaxPools = 16;

  int max_pools = 1;
  std::function<std::unique_ptr<BfcAllocator>()> make_pool;
  // The first thread to use the allocator: this pool serves it.
  std::atomic<const void*> first_thread{nullptr};
  // Slot 0 is this allocator; slots are filled once and never change.
  std::array<std::atomic<BfcAllocator*>, kMaxPools> pools{};
  std::array<std::atomic<uintptr_t>, kMaxPools> bases{};
  std::mutex making;  // serialises make_pool
  // Set by SetTimingCounter: threads that have no pool yet get none.
  std::atomic<bool> closed{false};
  std::vector<std::unique_ptr<BfcAllocator>> owned;  // guarded by `making`

  // Calls `visit` on every pool made so far (this allocator excluded).
  template <typename Visit>
  void ForEachMade(Visit visit) const {
    for (int i = 1; i < max_pools; ++i) {
      if (BfcAllocator* pool = pools[i].load(std::memory_order_acquire))
        visit(*pool);
    }
  }

  static const void* ThisThread() {
    thread_local const char token = 0;
    return &token;
  }
};

}  // namespace tensormem

#endif  // TENSORMEM_SRC_ALLOC_BFC_THREAD_POOLS_H_
