#include "tensormem/alloc/simulated_sub_allocator.h"

#include <cstdio>
#include <utility>

#include "alloc/address_space.h"
#include "tensormem/core/checked_math.h"

namespace tensormem {

SimulatedSubAllocator::SimulatedSubAllocator(
    uint64_t capacity, bool coalescing, std::vector<Visitor> alloc_visitors,
    std::vector<Visitor> free_visitors)
    : SubAllocator(std::move(alloc_visitors), std::move(free_visitors)),
      capacity_(capacity),
      coalescing_(coalescing) {
  absl::StatusOr<internal::ReservedAddressSpace> space =
      internal::ReservedAddressSpace::Reserve(capacity, kBaseAlignment);
  if (!space.ok()) {
    status_ = space.status();
    free_ranges_ = std::make_unique<internal::FreeRangeMap>(0, 0);
    return;
  }
  space_ = std::make_unique<internal::ReservedAddressSpace>(*std::move(space));
  free_ranges_ = std::make_unique<internal::FreeRangeMap>(
      space_->base_address(), space_->capacity());
}

SimulatedSubAllocator::~SimulatedSubAllocator() = default;

const void* SimulatedSubAllocator::BaseAddress() const {
  return space_ == nullptr ? nullptr : space_->base();
}

void* SimulatedSubAllocator::Alloc(size_t alignment, size_t bytes,
                                   size_t* bytes_received) {
  *bytes_received = 0;
  if (bytes == 0 || (alignment != 0 && !IsPowerOfTwo(alignment)))
    return nullptr;
  uintptr_t start;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::optional<uintptr_t> taken =
        free_ranges_->TakeFirstFit(bytes, alignment == 0 ? 1 : alignment);
    if (!taken) return nullptr;
    start = *taken;
    live_regions_.emplace(start, bytes);
    bytes_in_use_ += bytes;
  }
  *bytes_received = bytes;
  void* region = reinterpret_cast<void*>(start);
  VisitAlloc(region, /*index=*/0, bytes);
  return region;
}

void SimulatedSubAllocator::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_regions_.find(start);
    if (it == live_regions_.end() || it->second != bytes) {
      ++misuse_count_;
      std::fprintf(stderr, "tensormem: simulated: ignoring Free(%p, %zu): %s\n",
                   ptr, bytes,
                   it == live_regions_.end()
                       ? "not a live region"
                       : "size differs from the region's");
      return;
    }
    live_regions_.erase(it);
    bytes_in_use_ -= bytes;
  }
  // Visit before the range becomes free again, so a visitor never sees the
  // same addresses handed out to another thread before it was told of the free.
  VisitFree(ptr, /*index=*/0, bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  free_ranges_->Release(start, bytes);
}

uint64_t SimulatedSubAllocator::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_in_use_;
}

size_t SimulatedSubAllocator::region_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_regions_.size();
}

int64_t SimulatedSubAllocator::misuse_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return misuse_count_;
}

}  // namespace tensormem
