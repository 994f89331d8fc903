// ShardedAllocator: several independent BFC allocators ("shards"), each
// serving its own threads, so allocation throughput grows with threads.
//
// One BfcAllocator serialises every call on its mutex: two threads on
// independent streams get no more done than one. Here a thread allocates from
// shard (thread number % shards), taking only that shard's lock (a thread
// holds the lowest number free when it first allocates, until it exits, so
// threads alive at once take different shards while there are enough); a free
// goes to the shard whose address range holds the pointer (found without a
// lock: the shards' upstreams reserve disjoint, fixed ranges), so a block may
// be freed by any thread. Built from a specification (`shards`), the shards
// share one limit through a MemoryBudget (budgeted_sub_allocator.h): a shard
// holds what its threads need, and the pools together never pass the limit.
// The price: memory a shard holds serves only that shard's threads until it
// is given back. A request its own shard cannot serve is tried in the others,
// then, after every shard has returned its free regions, once more, before it
// fails. Placements within a shard are the shard's policy's.
//
//   std::vector<std::unique_ptr<BfcAllocator>> shards;
//   for (int i = 0; i < 2; ++i)
//     shards.push_back(std::make_unique<BfcAllocator>(
//         std::make_unique<SimulatedSubAllocator>(kGiB), kGiB));
//   TM_ASSIGN_OR_RETURN(std::unique_ptr<ShardedAllocator> sharded,
//                       ShardedAllocator::Create(std::move(shards)));
//   void* p = sharded->Allocate(4096);
//   sharded->Deallocate(p);  // from any thread
#ifndef TENSORMEM_ALLOC_SHARDED_ALLOCATOR_H_
#define TENSORMEM_ALLOC_SHARDED_ALLOCATOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tensormem/alloc/allocator.h"
#include "tensormem/alloc/bfc_allocator.h"

namespace tensormem {

class ShardedAllocator final : public Allocator {
 public:
  // `shared_limit`: the limit the shards share (their upstreams draw on one
  // MemoryBudget of it), reported as bytes_limit; 0: each shard has its own,
  // and bytes_limit is their sum. Errors: no shards, or a shard whose
  // upstream has no fixed address range (BaseAddress() is nullptr: host
  // memory comes from anywhere).
  static absl::StatusOr<std::unique_ptr<ShardedAllocator>> Create(
      std::vector<std::unique_ptr<BfcAllocator>> shards,
      uint64_t shared_limit = 0);

  std::string Name() const override;

  // Sums over the shards, except largest_alloc_size and
  // largest_free_block_bytes (the largest of any shard) and peak_bytes_in_use
  // and peak_pool_bytes: the sums of the shards' peaks, an upper bound of the
  // true peaks (shards may peak at different moments).
  std::optional<AllocatorStats> GetStats() const override;
  bool ClearStats() override;
  std::optional<size_t> RequestedSize(const void* ptr) const override;
  std::optional<size_t> AllocatedSize(const void* ptr) const override;

  int num_shards() const { return static_cast<int>(shards_.size()); }
  BfcAllocator& shard(int index) { return *shards_[index]; }

 private:
  ShardedAllocator(std::vector<std::unique_ptr<BfcAllocator>> shards,
                   uint64_t shared_limit);
  void* DoAllocate(size_t bytes, size_t alignment, int32_t stream) override;
  // The calling thread's shard first, then the others; none waits for frees.
  void* TryEveryShard(size_t bytes, size_t alignment, int32_t stream);
  absl::Status DoDeallocate(void* ptr) override;
  // The shard whose range holds `ptr` (for a pointer in none, the nearest one
  // below it, or the first: it reports the pointer as never handed out).
  const BfcAllocator& Owner(const void* ptr) const;
  BfcAllocator& Owner(const void* ptr) {
    return const_cast<BfcAllocator&>(
        static_cast<const ShardedAllocator*>(this)->Owner(ptr));
  }

  std::vector<std::unique_ptr<BfcAllocator>> shards_;  // by base address
  std::vector<uintptr_t> bases_;                       // shards_[i]'s base
  const uint64_t shared_limit_;
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_SHARDED_ALLOCATOR_H_
