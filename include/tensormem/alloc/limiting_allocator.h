// LimitingAllocator: a hard byte cap over any allocator.
//
// Caps what one user may take from a shared allocator (a per-process memory
// fraction, a tenant's budget): past the cap, Allocate returns nullptr
// without asking the wrapped allocator for more. A block is charged the
// wrapped allocator's AllocatedSize when it reports one (so rounding counts),
// else its requested size.
//
//   tensormem::SystemAllocator system;
//   tensormem::LimitingAllocator capped(system, 64 * tensormem::kMiB);
//   void* p = capped.Allocate(100 * tensormem::kMiB);  // nullptr: over the cap
#ifndef TENSORMEM_ALLOC_LIMITING_ALLOCATOR_H_
#define TENSORMEM_ALLOC_LIMITING_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "tensormem/alloc/allocator.h"
#include "tensormem/alloc/allocator_stats.h"
#include "tensormem/alloc/block_ledger.h"

namespace tensormem {

class LimitingAllocator final : public Allocator {
 public:
  // `wrapped` must outlive this allocator and every block allocated through it.
  LimitingAllocator(Allocator& wrapped, uint64_t limit_bytes)
      : wrapped_(wrapped), limit_bytes_(limit_bytes) {}

  std::string Name() const override {
    return "limiting(" + wrapped_.Name() + ")";
  }
  uint64_t limit_bytes() const { return limit_bytes_; }

  // Statistics of the blocks charged through this allocator: bytes_in_use
  // and pool_bytes are the charged bytes, bytes_limit is the cap.
  std::optional<AllocatorStats> GetStats() const override
      ABSL_LOCKS_EXCLUDED(mutex_);
  bool ClearStats() override ABSL_LOCKS_EXCLUDED(mutex_);
  // Sizes of this allocator's own live blocks (AllocatedSize = the charge).
  std::optional<size_t> RequestedSize(const void* ptr) const override
      ABSL_LOCKS_EXCLUDED(mutex_);
  std::optional<size_t> AllocatedSize(const void* ptr) const override
      ABSL_LOCKS_EXCLUDED(mutex_);

 private:
  void* DoAllocate(size_t bytes, size_t alignment, int32_t stream) override
      ABSL_LOCKS_EXCLUDED(mutex_);
  absl::Status DoDeallocate(void* ptr) override ABSL_LOCKS_EXCLUDED(mutex_);

  Allocator& wrapped_;
  const uint64_t limit_bytes_;
  mutable std::mutex mutex_;
  // Charged bytes plus the requested bytes of allocations under way, so two
  // threads cannot both pass the check with the last bytes under the cap.
  uint64_t committed_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
  BlockLedger ledger_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_LIMITING_ALLOCATOR_H_
