// BfcAllocator's thread pools: one pool per thread past the first, made on
// demand, sharing the limit (EnableThreadPools in bfc_allocator.h).
#include "alloc/bfc_thread_pools.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "alloc/bfc_core.h"
#include "alloc/thread_numbers.h"
#include "tensormem/alloc/bfc_allocator.h"

namespace tensormem {

void BfcAllocator::EnableThreadPools(
    int max_pools, std::function<std::unique_ptr<BfcAllocator>()> make_pool) {
  if (max_pools < 2 || make_pool == nullptr ||
      !core_->policy().AllowsThreadPools() ||
      upstream_->BaseAddress() == nullptr) {
    return;
  }
  pools_ = std::make_unique<ThreadPools>();
  pools_->max_pools = std::min(max_pools, ThreadPools::kMaxPools);
  pools_->make_pool = std::move(make_pool);
  pools_->bases[0] = reinterpret_cast<uintptr_t>(upstream_->BaseAddress());
}

int BfcAllocator::num_thread_pools() const {
  if (pools_ == nullptr) return 0;
  int made = 0;
  pools_->ForEachMade([&](const BfcAllocator&) { ++made; });
  return made;
}

BfcAllocator* BfcAllocator::PoolForThisThread() {
  if (pools_->closed.load(std::memory_order_relaxed)) return nullptr;
  const void* self = ThreadPools::ThisThread();
  const void* first = pools_->first_thread.load(std::memory_order_relaxed);
  if (first == self) return nullptr;
  if (first == nullptr && pools_->first_thread.compare_exchange_strong(
                              first, self, std::memory_order_relaxed)) {
    return nullptr;
  }
  const int slot =
      1 + static_cast<int>(internal::ThreadNumber() % (pools_->max_pools - 1));
  if (BfcAllocator* pool = pools_->pools[slot].load(std::memory_order_acquire))
    return pool;
  std::lock_guard lock(pools_->making);
  if (BfcAllocator* pool = pools_->pools[slot].load(std::memory_order_relaxed))
    return pool;
  std::unique_ptr<BfcAllocator> pool = pools_->make_pool();
  if (pool == nullptr || pool->upstream().BaseAddress() == nullptr)
    return nullptr;  // this pool serves the thread after all
  pools_->bases[slot].store(
      reinterpret_cast<uintptr_t>(pool->upstream().BaseAddress()),
      std::memory_order_relaxed);
  pools_->pools[slot].store(pool.get(), std::memory_order_release);
  pools_->owned.push_back(std::move(pool));
  return pools_->owned.back().get();
}

BfcAllocator* BfcAllocator::PoolOwning(const void* ptr) const {
  // Each pool reserves its own range: the owner is the pool with the highest
  // base at or below the pointer (a pointer in none is diagnosed there).
  const uintptr_t address = reinterpret_cast<uintptr_t>(ptr);
  uintptr_t best = pools_->bases[0];
  BfcAllocator* owner = nullptr;
  for (int i = 1; i < pools_->max_pools; ++i) {
    BfcAllocator* pool = pools_->pools[i].load(std::memory_order_acquire);
    if (pool == nullptr) continue;
    const uintptr_t base = pools_->bases[i].load(std::memory_order_relaxed);
    if (base <= address && (base > best || best > address)) {
      best = base;
      owner = pool;
    }
  }
  return owner;
}

void* BfcAllocator::AllocateInPool(BfcAllocator& pool, size_t bytes,
                                   size_t alignment, int32_t stream) {
  AllocationAttributes once;
  once.retry_on_failure = false;
  once.stream = stream;
  if (void* ptr = pool.AllocateRaw(alignment, bytes, once)) return ptr;
  // The pool could not grow: the limit is held by the others. Their free
  // chunks, then their free regions, may serve it.
  for (int i = 0; i < pools_->max_pools; ++i) {
    BfcAllocator* other =
        i == 0 ? this : pools_->pools[i].load(std::memory_order_acquire);
    if (other == nullptr || other == &pool) continue;
    if (void* ptr = i == 0 ? AllocateSlowly(bytes, alignment, once)
                           : other->AllocateRaw(alignment, bytes, once)) {
      return ptr;
    }
  }
  if (ReleaseFreeRegions()) {
    if (void* ptr = pool.AllocateRaw(alignment, bytes, once)) return ptr;
  }
  // Fail (or wait for frees) as this allocator does, reporting here.
  AllocationAttributes attributes;
  attributes.stream = stream;
  return AllocateSlowly(bytes, alignment, attributes);
}

bool BfcAllocator::ReleasePoolsFreeRegions() {
  bool released = false;
  pools_->ForEachMade(
      [&](BfcAllocator& pool) { released |= pool.ReleaseFreeRegions(); });
  return released;
}

}  // namespace tensormem
