#include "tensormem/alloc/budgeted_sub_allocator.h"

namespace tensormem {

bool MemoryBudget::TryCharge(uint64_t bytes) {
  uint64_t used = used_.load(std::memory_order_relaxed);
  do {
    if (bytes > limit_ || used > limit_ - bytes) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes,
                                        std::memory_order_relaxed));
  return true;
}

void* BudgetedSubAllocator::Alloc(size_t bytes, size_t alignment,
                                  size_t* bytes_received) {
  *bytes_received = 0;
  if (!budget_->TryCharge(bytes)) return nullptr;
  void* ptr = upstream_->Alloc(bytes, alignment, bytes_received);
  if (ptr == nullptr) {
    budget_->Credit(bytes);
    return nullptr;
  }
  if (*bytes_received > bytes) {
    budget_->Charge(*bytes_received - bytes);
  } else {
    budget_->Credit(bytes - *bytes_received);
  }
  return ptr;
}

void BudgetedSubAllocator::Free(void* ptr, size_t bytes) {
  upstream_->Free(ptr, bytes);
  budget_->Credit(bytes);
}

bool BudgetedSubAllocator::Decommit(void* ptr, size_t bytes) {
  if (!upstream_->Decommit(ptr, bytes)) return false;
  budget_->Credit(bytes);
  return true;
}

bool BudgetedSubAllocator::Recommit(void* ptr, size_t bytes) {
  if (!budget_->TryCharge(bytes)) return false;
  if (upstream_->Recommit(ptr, bytes)) return true;
  budget_->Credit(bytes);
  return false;
}

}  // namespace tensormem
