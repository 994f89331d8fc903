#include "tensormem/alloc/vmm_sub_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "alloc/reserved_regions.h"
#include "tensormem/core/checked_math.h"

namespace tensormem {
namespace {

// Makes [begin, begin + length) readable and writable, backing it on first
// touch; reports a refusal on stderr, naming what it was for.
bool CommitPages(uintptr_t begin, uint64_t length, const char* what) {
  if (mprotect(reinterpret_cast<void*>(begin), length,
               PROT_READ | PROT_WRITE) == 0) {
    return true;
  }
  std::fprintf(stderr, "tensormem: vmm: cannot %s %llu bytes: %s\n", what,
               static_cast<unsigned long long>(length), std::strerror(errno));
  return false;
}

// Drops the pages first so that their memory returns to the system even if
// the protection change fails; then makes the range inaccessible again.
bool DropPages(uintptr_t begin, uint64_t length) {
  void* pages = reinterpret_cast<void*>(begin);
  madvise(pages, length, MADV_DONTNEED);
  return mprotect(pages, length, PROT_NONE) == 0;
}

}  // namespace

VmmSubAllocator::VmmSubAllocator(uint64_t capacity,
                                 std::vector<Visitor> alloc_visitors,
                                 std::vector<Visitor> free_visitors)
    : SubAllocator(std::move(alloc_visitors), std::move(free_visitors)),
      capacity_(capacity),
      granularity_(static_cast<size_t>(sysconf(_SC_PAGESIZE))),
      regions_(std::make_unique<internal::ReservedRegions>(
          capacity, kBaseAlignment, granularity_)) {}

VmmSubAllocator::~VmmSubAllocator() = default;

const absl::Status& VmmSubAllocator::status() const {
  return regions_->status();
}

const void* VmmSubAllocator::BaseAddress() const { return regions_->base(); }

void* VmmSubAllocator::Alloc(size_t bytes, size_t alignment,
                             size_t* bytes_received) {
  *bytes_received = 0;
  if (bytes == 0 || (alignment != 0 && !IsPowerOfTwo(alignment))) {
    return nullptr;
  }
  const std::optional<uint64_t> size = CheckedRoundUp(bytes, granularity_);
  if (!size) return nullptr;
  const std::optional<uintptr_t> start =
      regions_->Take(*size, alignment < granularity_ ? granularity_ : alignment,
                     internal::ReservedRegions::Placement::kTopThenFirstFit,
                     [](uintptr_t begin, uint64_t length) {
                       return CommitPages(begin, length, "commit");
                     });
  if (!start) return nullptr;
  *bytes_received = *size;
  void* region = reinterpret_cast<void*>(*start);
  VisitAlloc(region, /*index=*/0, *size);
  return region;
}

void VmmSubAllocator::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  regions_->Free(ptr, bytes, Name(), [&] {
    VisitFree(ptr, /*index=*/0, bytes);
    DropPages(reinterpret_cast<uintptr_t>(ptr), bytes);
  });
}

bool VmmSubAllocator::Decommit(void* ptr, size_t bytes) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  if (start % granularity_ != 0 || bytes % granularity_ != 0) return false;
  return regions_->Decommit(start, bytes, Name(), DropPages);
}

bool VmmSubAllocator::Recommit(void* ptr, size_t bytes) {
  return regions_->Recommit(reinterpret_cast<uintptr_t>(ptr), bytes, Name(),
                            [](uintptr_t at, uint64_t length) {
                              return CommitPages(at, length, "recommit");
                            });
}

uint64_t VmmSubAllocator::committed_bytes() const {
  return regions_->live_bytes() - regions_->decommitted_bytes();
}

size_t VmmSubAllocator::region_count() const {
  return regions_->live_regions();
}

int64_t VmmSubAllocator::misuse_count() const {
  return regions_->misuse_count();
}

}  // namespace tensormem
