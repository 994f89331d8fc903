#include "tensormem/alloc/planned_allocator.h"

#include <utility>

#include "alloc/planned_serving.h"

namespace tensormem {

PlannedAllocator::PlannedAllocator(std::unique_ptr<BfcAllocator> fallback,
                                   PlannedAllocatorOptions options)
    : fallback_(std::move(fallback)),
      serving_(std::make_unique<alloc_internal::PlannedServing>(
          *fallback_, options.background_planning, options.growth_allowance)) {}

PlannedAllocator::~PlannedAllocator() = default;

std::string PlannedAllocator::Name() const { return fallback_->Name(); }

std::optional<AllocatorStats> PlannedAllocator::GetStats() const {
  std::optional<AllocatorStats> stats = fallback_->GetStats();
  if (stats) serving_->FillStats(*stats);
  return stats;
}

bool PlannedAllocator::ClearStats() {
  serving_->ClearStats();
  return fallback_->ClearStats();
}

std::optional<size_t> PlannedAllocator::RequestedSize(const void* ptr) const {
  return serving_->RequestedSize(ptr);
}

std::optional<size_t> PlannedAllocator::AllocatedSize(const void* ptr) const {
  return serving_->AllocatedSize(ptr);
}

PlannedAllocator::LoopStatus PlannedAllocator::loop_status() const {
  return serving_->Status();
}

void* PlannedAllocator::DoAllocate(size_t bytes, size_t alignment,
                                   int32_t stream) {
  if (bytes == 0) return nullptr;
  return serving_->Allocate({.kind = alloc_internal::LoopEventKind::kAlloc,
                             .stream = stream,
                             .alignment = static_cast<uint32_t>(alignment),
                             .value = bytes});
}

absl::Status PlannedAllocator::DoDeallocate(void* ptr) {
  return serving_->Deallocate(ptr);
}

bool PlannedAllocator::DoFreeIfLive(void* ptr) {
  return serving_->FreeIfLive(ptr);
}

void PlannedAllocator::DoMarkIteration() { serving_->MarkIteration(); }

}  // namespace tensormem
