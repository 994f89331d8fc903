#include "tensormem/alloc/simulated_sub_allocator.h"

#include <optional>
#include <utility>

#include "alloc/reserved_regions.h"
#include "tensormem/core/checked_math.h"

namespace tensormem {

SimulatedSubAllocator::SimulatedSubAllocator(
    uint64_t capacity, bool coalescing, std::vector<Visitor> alloc_visitors,
    std::vector<Visitor> free_visitors)
    : SubAllocator(std::move(alloc_visitors), std::move(free_visitors)),
      capacity_(capacity),
      coalescing_(coalescing),
      regions_(std::make_unique<internal::ReservedRegions>(
          capacity, kBaseAlignment, /*granularity=*/1)) {}

SimulatedSubAllocator::~SimulatedSubAllocator() = default;

const absl::Status& SimulatedSubAllocator::status() const {
  return regions_->status();
}

const void* SimulatedSubAllocator::BaseAddress() const {
  return regions_->base();
}

void* SimulatedSubAllocator::Alloc(size_t bytes, size_t alignment,
                                   size_t* bytes_received) {
  *bytes_received = 0;
  if (bytes == 0 || (alignment != 0 && !IsPowerOfTwo(alignment))) {
    return nullptr;
  }
  const std::optional<uintptr_t> start = regions_->Take(
      bytes, alignment == 0 ? 1 : alignment,
      internal::ReservedRegions::Placement::kFirstFit,
      [](uintptr_t, uint64_t) { return true; });  // never touched
  if (!start) return nullptr;
  *bytes_received = bytes;
  void* region = reinterpret_cast<void*>(*start);
  VisitAlloc(region, /*index=*/0, bytes);
  return region;
}

void SimulatedSubAllocator::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  regions_->Free(ptr, bytes, Name(),
                 [&] { VisitFree(ptr, /*index=*/0, bytes); });
}

bool SimulatedSubAllocator::Decommit(void* ptr, size_t bytes) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  if (start % 256 != 0 || bytes % 256 != 0) return false;
  return regions_->Decommit(start, bytes, Name(),
                            [](uintptr_t, uint64_t) { return true; });
}

bool SimulatedSubAllocator::Recommit(void* ptr, size_t bytes) {
  return regions_->Recommit(reinterpret_cast<uintptr_t>(ptr), bytes, Name(),
                            [](uintptr_t, uint64_t) { return true; });
}

uint64_t SimulatedSubAllocator::bytes_in_use() const {
  return regions_->live_bytes() - regions_->decommitted_bytes();
}

size_t SimulatedSubAllocator::region_count() const {
  return regions_->live_regions();
}

int64_t SimulatedSubAllocator::misuse_count() const {
  return regions_->misuse_count();
}

}  // namespace tensormem
