#include "tensormem/alloc/simulated_sub_allocator.h"

#include <cstdio>
#include <string>
#include <utility>

#include "alloc/address_space.h"
#include "alloc/region_ledger.h"
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
    ledger_ = std::make_unique<internal::RegionLedger>(0, 0);
    return;
  }
  space_ = std::make_unique<internal::ReservedAddressSpace>(*std::move(space));
  ledger_ = std::make_unique<internal::RegionLedger>(space_->base_address(),
                                                     space_->capacity());
}

SimulatedSubAllocator::~SimulatedSubAllocator() = default;

const void* SimulatedSubAllocator::BaseAddress() const {
  return space_ == nullptr ? nullptr : space_->base();
}

void* SimulatedSubAllocator::Alloc(size_t alignment, size_t bytes,
                                   size_t* bytes_received) {
  *bytes_received = 0;
  if (bytes == 0 || (alignment != 0 && !IsPowerOfTwo(alignment))) {
    return nullptr;
  }
  std::optional<uintptr_t> start;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    start = ledger_->TakeFirstFit(bytes, alignment == 0 ? 1 : alignment);
  }
  if (!start) return nullptr;
  *bytes_received = bytes;
  void* region = reinterpret_cast<void*>(*start);
  VisitAlloc(region, /*index=*/0, bytes);
  return region;
}

void SimulatedSubAllocator::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (absl::Status misuse = ledger_->Retire(start, bytes); !misuse.ok()) {
      std::fprintf(stderr, "tensormem: simulated: ignoring %s\n",
                   std::string(misuse.message()).c_str());
      return;
    }
  }
  // Visit before the range becomes free again, so a visitor never sees the
  // same addresses handed to another thread before it was told of the free.
  VisitFree(ptr, /*index=*/0, bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  ledger_->Release(start, bytes);
}

uint64_t SimulatedSubAllocator::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ledger_->live_bytes();
}

size_t SimulatedSubAllocator::region_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ledger_->live_regions();
}

int64_t SimulatedSubAllocator::misuse_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ledger_->misuse_count();
}

}  // namespace tensormem
