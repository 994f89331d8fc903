// BudgetedSubAllocator: a sub-allocator that draws on a memory budget shared
// with others, so that several allocators hold one limit between them.
//
// The shards of a ShardedAllocator each grow their own pool; with a shared
// budget a shard may hold as much of the limit as its threads need, instead
// of a fixed share, and the sum of the pools never passes the limit. Regions,
// extensions and recommitted ranges are charged when obtained (at the size
// the upstream gave) and credited when given back; a request the budget
// cannot cover is refused before the upstream is asked.
//
//   auto budget = std::make_shared<MemoryBudget>(1 * kGiB);
//   auto a = std::make_unique<BudgetedSubAllocator>(
//       std::make_unique<SimulatedSubAllocator>(kGiB), budget);
//   auto b = std::make_unique<BudgetedSubAllocator>(
//       std::make_unique<SimulatedSubAllocator>(kGiB), budget);
//   // a and b together hold at most 1 GiB.
#ifndef TENSORMEM_ALLOC_BUDGETED_SUB_ALLOCATOR_H_
#define TENSORMEM_ALLOC_BUDGETED_SUB_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/btree_map.h"
#include "tensormem/alloc/sub_allocator.h"

namespace tensormem {

// Bytes several sub-allocators may hold in all. Thread-safe.
class MemoryBudget {
 public:
  explicit MemoryBudget(uint64_t limit) : limit_(limit) {}
  // Charges `bytes` if they fit; false (nothing charged) otherwise.
  bool TryCharge(uint64_t bytes);
  // Charges `bytes` whether or not they fit (what an upstream gave beyond a
  // request: the memory is held either way).
  void Charge(uint64_t bytes) {
    used_.fetch_add(bytes, std::memory_order_relaxed);
  }
  void Credit(uint64_t bytes) {
    used_.fetch_sub(bytes, std::memory_order_relaxed);
  }
  uint64_t limit() const { return limit_; }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

class BudgetedSubAllocator final : public SubAllocator {
 public:
  BudgetedSubAllocator(std::unique_ptr<SubAllocator> upstream,
                       std::shared_ptr<MemoryBudget> budget)
      : upstream_(std::move(upstream)), budget_(std::move(budget)) {}

  void* Alloc(size_t bytes, size_t alignment, size_t* bytes_received) override;
  void Free(void* ptr, size_t bytes) override;
  bool Decommit(void* ptr, size_t bytes) override;
  bool Recommit(void* ptr, size_t bytes) override;

  bool SupportsCoalescing() const override {
    return upstream_->SupportsCoalescing();
  }
  MemoryKind GetMemoryKind() const override {
    return upstream_->GetMemoryKind();
  }
  std::string Name() const override { return upstream_->Name(); }
  bool DecommitWaitsForDevice() const override {
    return upstream_->DecommitWaitsForDevice();
  }
  uint64_t DecommitGranularity() const override {
    return upstream_->DecommitGranularity();
  }
  const void* BaseAddress() const override { return upstream_->BaseAddress(); }

  const MemoryBudget& budget() const { return *budget_; }

 private:
  // Forgets the decommitted ranges inside [start, start + bytes); returns
  // their bytes.
  uint64_t ForgetDecommitted(uintptr_t start, uint64_t bytes);

  const std::unique_ptr<SubAllocator> upstream_;
  const std::shared_ptr<MemoryBudget> budget_;
  // Ranges decommitted and not recommitted since (start -> bytes): they were
  // credited when decommitted, so a region freed with them inside credits
  // only the rest. Called under the owning allocator's lock, as every call.
  absl::btree_map<uintptr_t, uint64_t> decommitted_;
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_BUDGETED_SUB_ALLOCATOR_H_
