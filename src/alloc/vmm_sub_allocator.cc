#include "tensormem/alloc/vmm_sub_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "alloc/address_space.h"
#include "alloc/region_ledger.h"
#include "tensormem/core/checked_math.h"

namespace tensormem {

VmmSubAllocator::VmmSubAllocator(uint64_t capacity,
                                 std::vector<Visitor> alloc_visitors,
                                 std::vector<Visitor> free_visitors)
    : SubAllocator(std::move(alloc_visitors), std::move(free_visitors)),
      capacity_(capacity),
      granularity_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {
  absl::StatusOr<internal::ReservedAddressSpace> space =
      internal::ReservedAddressSpace::Reserve(capacity, kBaseAlignment);
  if (!space.ok()) {
    status_ = space.status();
    ledger_ = std::make_unique<internal::RegionLedger>(0, 0);
    return;
  }
  space_ = std::make_unique<internal::ReservedAddressSpace>(*std::move(space));
  // A capacity that is not a whole number of pages loses its partial page.
  ledger_ = std::make_unique<internal::RegionLedger>(
      space_->base_address(), RoundDown(space_->capacity(), granularity_));
}

VmmSubAllocator::~VmmSubAllocator() = default;

const void* VmmSubAllocator::BaseAddress() const {
  return space_ == nullptr ? nullptr : space_->base();
}

void* VmmSubAllocator::Alloc(size_t alignment, size_t bytes,
                             size_t* bytes_received) {
  *bytes_received = 0;
  if (bytes == 0 || (alignment != 0 && !IsPowerOfTwo(alignment))) {
    return nullptr;
  }
  const std::optional<uint64_t> size = CheckedRoundUp(bytes, granularity_);
  if (!size) return nullptr;
  const uint64_t effective_alignment =
      alignment < granularity_ ? granularity_ : alignment;
  uintptr_t start;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::optional<uintptr_t> taken =
        ledger_->TakeFromTop(*size, effective_alignment);
    if (!taken) taken = ledger_->TakeFirstFit(*size, effective_alignment);
    if (!taken) return nullptr;
    start = *taken;
    // Committing inside the lock keeps a failed commit from leaving a hole
    // that another thread's region was placed above.
    if (mprotect(reinterpret_cast<void*>(start), *size,
                 PROT_READ | PROT_WRITE) != 0) {
      std::fprintf(stderr, "tensormem: vmm: cannot commit %llu bytes: %s\n",
                   static_cast<unsigned long long>(*size),
                   std::strerror(errno));
      ledger_->Retire(start, *size).IgnoreError();  // it is live: cannot fail
      ledger_->Release(start, *size);
      return nullptr;
    }
  }
  *bytes_received = *size;
  void* region = reinterpret_cast<void*>(start);
  VisitAlloc(region, /*index=*/0, *size);
  return region;
}

void VmmSubAllocator::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (absl::Status misuse = ledger_->Retire(start, bytes); !misuse.ok()) {
      std::fprintf(stderr, "tensormem: vmm: ignoring %s\n",
                   std::string(misuse.message()).c_str());
      return;
    }
  }
  // Visit before the range becomes free again (see SimulatedSubAllocator).
  VisitFree(ptr, /*index=*/0, bytes);
  // Drop the pages first so their memory returns to the system even if the
  // protection change fails; then make the range inaccessible again.
  madvise(ptr, bytes, MADV_DONTNEED);
  mprotect(ptr, bytes, PROT_NONE);
  std::lock_guard<std::mutex> lock(mutex_);
  ledger_->Release(start, bytes);
}

uint64_t VmmSubAllocator::committed_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ledger_->live_bytes();
}

size_t VmmSubAllocator::region_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ledger_->live_regions();
}

int64_t VmmSubAllocator::misuse_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ledger_->misuse_count();
}

}  // namespace tensormem
