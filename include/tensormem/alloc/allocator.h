// Allocator: the interface every tensormem allocator and adaptor implements.
//
// The public calls are non-virtual and forward to private Do* hooks, so the
// misuse policy (what happens on a bad free) lives in one place for all of
// them. The allocation hot path returns nullptr on out-of-memory and never
// throws.
//
//   std::unique_ptr<Allocator> allocator = ...;
//   void* p = allocator->Allocate(4096);        // nullptr when out of memory
//   absl::Status s = allocator->CheckedDeallocate(p);
//   allocator->Deallocate(p);  // double free: handled by the policy
#ifndef TENSORMEM_ALLOC_ALLOCATOR_H_
#define TENSORMEM_ALLOC_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "tensormem/alloc/allocator_stats.h"

namespace tensormem {

// What a plain Deallocate does when the checked call reports misuse (a free of
// an unknown, interior or already-freed pointer). Misuse never changes state.
enum class MisusePolicy {
  kLogAndAbort,   // TensorFlow's behaviour: print the error, then abort().
  kLogAndIgnore,  // print the error to stderr and go on.
  kCallback,      // hand the error to the user's callback.
};

class Allocator {
 public:
  // Minimum alignment callers may rely on when they pass none.
  static constexpr size_t kDefaultAlignment = 64;

  virtual ~Allocator() = default;

  // A short name for reports, e.g. "bfc" or "system".
  virtual std::string Name() const = 0;

  // Returns a block of at least `bytes` bytes aligned to `alignment` (a power
  // of two), or nullptr when `bytes` is 0, the request cannot be served, or the
  // alignment is invalid. `stream` names the (CUDA) stream the block is used
  // on: allocators whose policy keeps streams apart serve it only from memory
  // of that stream; the others ignore it.
  void* Allocate(size_t bytes, size_t alignment = kDefaultAlignment,
                 int32_t stream = 0) {
    return DoAllocate(bytes, alignment, stream);
  }

  // Frees a block from Allocate. nullptr is a no-op. Misuse goes to the
  // misuse policy and leaves the allocator unchanged. Inline: a free that
  // succeeds builds no Status.
  void Deallocate(void* ptr) {
    if (ptr == nullptr || DoFreeIfLive(ptr)) return;
    DeallocateChecked(ptr);
  }

  // Same as Deallocate, but reports misuse as a Status instead of the policy.
  absl::Status CheckedDeallocate(void* ptr) {
    if (ptr == nullptr) return absl::OkStatus();
    return DoDeallocate(ptr);
  }

  // Statistics with TensorFlow's names, when the allocator keeps them.
  virtual std::optional<AllocatorStats> GetStats() const {
    return std::nullopt;
  }
  // Resets num_allocs, the peak (to the bytes in use now) and the largest
  // allocation. Returns false when the allocator keeps no statistics.
  virtual bool ClearStats() { return false; }

  // Sizes of a live block: as requested, and as actually reserved for it.
  virtual std::optional<size_t> RequestedSize(const void* /*ptr*/) const {
    return std::nullopt;
  }
  virtual std::optional<size_t> AllocatedSize(const void* /*ptr*/) const {
    return std::nullopt;
  }

  // Tells the allocator that an iteration of the program's loop begins here
  // (a training step, an inference request). Allocators that learn loops
  // (the planned policy, planned_allocator.h) then take the iterations
  // between marks as the loop instead of finding it; the others ignore it.
  void MarkIteration() { DoMarkIteration(); }

  void SetMisusePolicy(
      MisusePolicy policy,
      std::function<void(const absl::Status&)> callback = nullptr);

 protected:
  // Hands a misuse error (a bad free, contradictory options) to the misuse
  // policy.
  void ReportMisuse(const absl::Status& status);

 private:
  virtual void* DoAllocate(size_t bytes, size_t alignment, int32_t stream) = 0;
  virtual absl::Status DoDeallocate(void* ptr) = 0;
  // The plain free's fast path: frees `ptr` (not null) and returns true, or
  // returns false having changed nothing (misuse, or no fast path, as by
  // default); Deallocate then frees through DoDeallocate, whose Status goes
  // to the misuse policy.
  virtual bool DoFreeIfLive(void* /*ptr*/) { return false; }
  virtual void DoMarkIteration() {}
  // Out of line: CheckedDeallocate, and the misuse policy for its error.
  void DeallocateChecked(void* ptr);

  MisusePolicy misuse_policy_ = MisusePolicy::kLogAndAbort;
  std::function<void(const absl::Status&)> misuse_callback_;
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_ALLOCATOR_H_
