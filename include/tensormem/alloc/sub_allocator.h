// SubAllocator: where an allocator's regions come from (its "upstream").
//
// A sub-allocator hands out large regions; the BFC allocator cuts them into
// chunks. It may hand back more than asked (the caller uses all of it), and a
// coalescing sub-allocator may return a region that starts exactly where the
// previous one ended, which lets the caller extend its last region instead of
// adding a new one. Visitors observe every region obtained or returned (e.g. to
// register memory with a device); free visitors run in reverse order.
//
//   auto upstream = std::make_unique<SimulatedSubAllocator>(80 * kGiB);
//   size_t received = 0;
//   void* region = upstream->Alloc(2 * kMiB, 256, &received);
#ifndef TENSORMEM_ALLOC_SUB_ALLOCATOR_H_
#define TENSORMEM_ALLOC_SUB_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tensormem {

enum class MemoryKind {
  kUnknown,
  kDevice,
  kHostPageable,
  kHostPinned,
  kSimulated
};

class SubAllocator {
 public:
  // Called with (region start, index such as a device or NUMA node, bytes).
  using Visitor = std::function<void(void* ptr, int index, size_t bytes)>;

  explicit SubAllocator(std::vector<Visitor> alloc_visitors = {},
                        std::vector<Visitor> free_visitors = {})
      : alloc_visitors_(std::move(alloc_visitors)),
        free_visitors_(std::move(free_visitors)) {}
  virtual ~SubAllocator() = default;
  SubAllocator(const SubAllocator&) = delete;
  SubAllocator& operator=(const SubAllocator&) = delete;

  // Returns a region of *bytes_received >= bytes bytes aligned to `alignment`,
  // or nullptr (and *bytes_received = 0) when it cannot.
  virtual void* Alloc(size_t bytes, size_t alignment,
                      size_t* bytes_received) = 0;
  // Returns a region (the pointer and size that Alloc reported).
  virtual void Free(void* ptr, size_t bytes) = 0;
  // True when consecutive regions may be contiguous and merged by the caller.
  virtual bool SupportsCoalescing() const = 0;
  virtual MemoryKind GetMemoryKind() const = 0;
  virtual std::string Name() const = 0;
  // Giving memory back inside a live region while keeping its addresses, for
  // upstreams that reserve address space and back it on demand (a GPU's
  // virtual memory management). The granularity is 0 when unsupported; ranges
  // are whole multiples of it, aligned to it.
  virtual uint64_t DecommitGranularity() const { return 0; }
  // Releases the memory behind [ptr, ptr + bytes) of live regions; false (and
  // nothing changes) when refused.
  virtual bool Decommit(void* /*ptr*/, size_t /*bytes*/) { return false; }
  // Backs a decommitted range again; false when it cannot (out of memory).
  virtual bool Recommit(void* /*ptr*/, size_t /*bytes*/) { return false; }
  // Whether a decommit first waits for a device's queued work (a GPU's
  // unmap): giving holes back then costs time, so policies that do it to
  // hold the high-water mark do it only under pressure unless configured.
  virtual bool DecommitWaitsForDevice() const { return false; }
  // Start of the address range regions come from, for reporting offsets
  // (address - base); nullptr when regions come from anywhere.
  virtual const void* BaseAddress() const { return nullptr; }

 protected:
  void VisitAlloc(void* ptr, int index, size_t bytes) {
    for (const Visitor& visitor : alloc_visitors_) visitor(ptr, index, bytes);
  }
  void VisitFree(void* ptr, int index, size_t bytes) {
    for (auto it = free_visitors_.rbegin(); it != free_visitors_.rend(); ++it) {
      (*it)(ptr, index, bytes);
    }
  }

 private:
  const std::vector<Visitor> alloc_visitors_;
  const std::vector<Visitor> free_visitors_;
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_SUB_ALLOCATOR_H_
