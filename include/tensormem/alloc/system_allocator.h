// SystemAllocator: the C library's aligned malloc, with sizes and statistics.
//
// The baseline every other allocator is compared with: it pools nothing, so
// its bytes in use are exactly what the C library holds for the caller. It
// remembers every live block, which lets it report sizes and catch a free of
// a pointer it never handed out (or already freed) instead of corrupting the
// heap.
//
//   tensormem::SystemAllocator system;
//   void* p = system.Allocate(1000, 64);
//   system.AllocatedSize(p);            // >= 1000, what malloc really reserved
//   system.Deallocate(p);
//   absl::Status s = system.CheckedDeallocate(p);  // error: already freed
#ifndef TENSORMEM_ALLOC_SYSTEM_ALLOCATOR_H_
#define TENSORMEM_ALLOC_SYSTEM_ALLOCATOR_H_

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "tensormem/alloc/allocator.h"
#include "tensormem/alloc/allocator_stats.h"
#include "tensormem/alloc/block_ledger.h"

namespace tensormem {

class SystemAllocator final : public Allocator {
 public:
  SystemAllocator() = default;

  std::string Name() const override { return "system"; }

  // bytes_in_use and pool_bytes are the sizes malloc reserved (AllocatedSize);
  // there is no limit and no free block.
  std::optional<AllocatorStats> GetStats() const override
      ABSL_LOCKS_EXCLUDED(mutex_);
  bool ClearStats() override ABSL_LOCKS_EXCLUDED(mutex_);

  // nullopt for a pointer that is not a live block of this allocator.
  std::optional<size_t> RequestedSize(const void* ptr) const override
      ABSL_LOCKS_EXCLUDED(mutex_);
  std::optional<size_t> AllocatedSize(const void* ptr) const override
      ABSL_LOCKS_EXCLUDED(mutex_);

 private:
  void* DoAllocate(size_t bytes, size_t alignment, int32_t /*stream*/) override
      ABSL_LOCKS_EXCLUDED(mutex_);
  absl::Status DoDeallocate(void* ptr) override ABSL_LOCKS_EXCLUDED(mutex_);

  mutable std::mutex mutex_;
  BlockLedger ledger_ ABSL_GUARDED_BY(mutex_);  // charged: malloc's size
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_SYSTEM_ALLOCATOR_H_
