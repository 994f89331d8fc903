// FaultInjectingSubAllocator: a test upstream that fails on purpose.
//
// Wraps another sub-allocator and, as configured, fails chosen Alloc (and
// Recommit) calls, fails all of them, or reports fewer bytes received than
// asked (a broken upstream the caller must survive). It counts calls and
// checks that every Free names a live region with the size Alloc reported.
//
//   auto faulty = std::make_unique<tensormem::FaultInjectingSubAllocator>(
//       std::make_unique<tensormem::SimulatedSubAllocator>(tensormem::kGiB));
//   faulty->FailAllocCall(2);  // the second Alloc call returns nullptr
//   tensormem::FaultInjectingSubAllocator* probe = faulty.get();
//   BfcAllocator bfc(std::move(faulty), tensormem::kGiB, {});
//   ... probe->alloc_calls(), probe->bad_frees() ...
#ifndef TENSORMEM_ALLOC_FAULT_INJECTING_SUB_ALLOCATOR_H_
#define TENSORMEM_ALLOC_FAULT_INJECTING_SUB_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "tensormem/alloc/sub_allocator.h"

namespace tensormem {

class FaultInjectingSubAllocator final : public SubAllocator {
 public:
  explicit FaultInjectingSubAllocator(std::unique_ptr<SubAllocator> wrapped);

  // Makes Alloc call number `call_number` (1 = the first call ever made)
  // return nullptr. May be called for several numbers.
  void FailAllocCall(int64_t call_number) ABSL_LOCKS_EXCLUDED(mutex_);
  // While on, every Alloc returns nullptr without reaching the wrapped one.
  void SetFailAlways(bool fail_always) ABSL_LOCKS_EXCLUDED(mutex_);
  // Successful Allocs report `shortfall` bytes fewer than asked (0 when the
  // shortfall is larger) although the wrapped region is full size. A Free must
  // name the reported size; the wrapped allocator gets back the real one.
  void SetShortfall(size_t shortfall) ABSL_LOCKS_EXCLUDED(mutex_);

  void* Alloc(size_t bytes, size_t alignment, size_t* bytes_received) override;
  // Frees of an unknown region or with a size other than the one reported
  // are counted in bad_frees() and not passed on.
  void Free(void* ptr, size_t bytes) override;
  bool SupportsCoalescing() const override {
    return wrapped_->SupportsCoalescing();
  }
  uint64_t DecommitGranularity() const override {
    return wrapped_->DecommitGranularity();
  }
  bool DecommitWaitsForDevice() const override {
    return wrapped_->DecommitWaitsForDevice();
  }
  bool Decommit(void* ptr, size_t bytes) override ABSL_LOCKS_EXCLUDED(mutex_);
  // Acquires memory, so it counts as an Alloc call and fails like one.
  bool Recommit(void* ptr, size_t bytes) override ABSL_LOCKS_EXCLUDED(mutex_);
  MemoryKind GetMemoryKind() const override {
    return wrapped_->GetMemoryKind();
  }
  std::string Name() const override {
    return "fault_injecting(" + wrapped_->Name() + ")";
  }
  const void* BaseAddress() const override { return wrapped_->BaseAddress(); }

  int64_t alloc_calls() const ABSL_LOCKS_EXCLUDED(mutex_);
  int64_t failed_allocs() const
      ABSL_LOCKS_EXCLUDED(mutex_);  // injected or real
  int64_t free_calls() const ABSL_LOCKS_EXCLUDED(mutex_);
  int64_t bad_frees() const ABSL_LOCKS_EXCLUDED(mutex_);
  size_t live_regions() const ABSL_LOCKS_EXCLUDED(mutex_);
  // Bytes of live regions as reported to callers, less those decommitted.
  uint64_t live_bytes() const ABSL_LOCKS_EXCLUDED(mutex_);

  SubAllocator& wrapped() { return *wrapped_; }

 private:
  struct Region {
    size_t reported_bytes;
    size_t real_bytes;
    size_t decommitted_bytes = 0;
  };
  // Counts an Alloc (or Recommit) call; true when it is to fail (counted
  // as failed).
  bool CountCallAndFail() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Moves [ptr, ptr + bytes) into (or out of) the decommitted bytes of the
  // live regions it lies in.
  void CountDecommitted(const void* ptr, size_t bytes, bool decommitted)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const std::unique_ptr<SubAllocator> wrapped_;
  mutable std::mutex mutex_;
  absl::flat_hash_set<int64_t> failing_calls_ ABSL_GUARDED_BY(mutex_);
  bool fail_always_ ABSL_GUARDED_BY(mutex_) = false;
  size_t shortfall_ ABSL_GUARDED_BY(mutex_) = 0;
  absl::flat_hash_map<const void*, Region> regions_ ABSL_GUARDED_BY(mutex_);
  int64_t alloc_calls_ ABSL_GUARDED_BY(mutex_) = 0;
  int64_t failed_allocs_ ABSL_GUARDED_BY(mutex_) = 0;
  int64_t free_calls_ ABSL_GUARDED_BY(mutex_) = 0;
  int64_t bad_frees_ ABSL_GUARDED_BY(mutex_) = 0;
  uint64_t live_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_FAULT_INJECTING_SUB_ALLOCATOR_H_
