#include "tensormem/alloc/budgeted_sub_allocator.h"

#include <algorithm>

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
  budget_->Credit(bytes -
                  ForgetDecommitted(reinterpret_cast<uintptr_t>(ptr), bytes));
}

bool BudgetedSubAllocator::Decommit(void* ptr, size_t bytes) {
  if (!upstream_->Decommit(ptr, bytes)) return false;
  budget_->Credit(bytes);
  decommitted_[reinterpret_cast<uintptr_t>(ptr)] = bytes;
  return true;
}

bool BudgetedSubAllocator::Recommit(void* ptr, size_t bytes) {
  if (!budget_->TryCharge(bytes)) return false;
  if (upstream_->Recommit(ptr, bytes)) {
    ForgetDecommitted(reinterpret_cast<uintptr_t>(ptr), bytes);
    return true;
  }
  budget_->Credit(bytes);
  return false;
}

uint64_t BudgetedSubAllocator::ForgetDecommitted(uintptr_t start,
                                                 uint64_t bytes) {
  const uintptr_t end = start + bytes;
  uint64_t forgotten = 0;
  // The first range that may overlap: the last one starting at or before.
  auto it = decommitted_.upper_bound(start);
  if (it != decommitted_.begin()) --it;
  while (it != decommitted_.end() && it->first < end) {
    const uintptr_t range_start = it->first;
    const uintptr_t range_end = range_start + it->second;
    if (range_end <= start) {
      ++it;
      continue;
    }
    it = decommitted_.erase(it);
    // What lies outside [start, end) stays decommitted.
    if (range_start < start) decommitted_[range_start] = start - range_start;
    if (range_end > end) decommitted_[end] = range_end - end;
    forgotten += std::min(range_end, end) - std::max(range_start, start);
    it = decommitted_.lower_bound(range_end);
  }
  return forgotten;
}

}  // namespace tensormem
