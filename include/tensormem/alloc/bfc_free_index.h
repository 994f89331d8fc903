// BfcFreeIndex: the BFC allocator's index of free chunks (its "bins").
//
// The allocator asks the index for the best fit: among free chunks of size >=
// the request that a filter accepts, the smallest, ties broken by the lowest
// address. That is exactly what TensorFlow's per-bin scan yields, so any index
// answering it places blocks where TensorFlow does. tensormem ships a fast
// index (MakeFastFreeIndex: O(log n) best fit); tests and benchmarks plug in a
// TensorFlow-style linear-scan reference through the same interface.
//
//   std::unique_ptr<BfcFreeIndex> index = MakeFastFreeIndex();
//   index->Insert({.size = 4096, .address = 0x10000, .handle = 7});
//   // The 4096-byte chunk:
//   std::optional<FreeChunkKey> fit = index->FindBestFit(1024);
#ifndef TENSORMEM_ALLOC_BFC_FREE_INDEX_H_
#define TENSORMEM_ALLOC_BFC_FREE_INDEX_H_

#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"

namespace tensormem {

// A free chunk as the index sees it. Ordered by (size, address); `handle` is
// the allocator's name for the chunk and takes no part in the order.
struct FreeChunkKey {
  uint64_t size = 0;
  uint64_t address = 0;
  uint32_t handle = 0;

  friend bool operator==(const FreeChunkKey& a, const FreeChunkKey& b) {
    return a.size == b.size && a.address == b.address;
  }
  friend std::strong_ordering operator<=>(const FreeChunkKey& a,
                                          const FreeChunkKey& b) {
    if (auto order = a.size <=> b.size; order != 0) return order;
    return a.address <=> b.address;
  }
  // Spelled out: the ordered containers call it on every probe.
  friend bool operator<(const FreeChunkKey& a, const FreeChunkKey& b) {
    return a.size != b.size ? a.size < b.size : a.address < b.address;
  }
};

class BfcFreeIndex {
 public:
  using Filter = absl::FunctionRef<bool(const FreeChunkKey&)>;

  virtual ~BfcFreeIndex() = default;

  // A short name for benchmarks and reports.
  virtual std::string Name() const = 0;

  // Adds a chunk; its (size, address) must not be in the index yet.
  virtual void Insert(const FreeChunkKey& key) = 0;
  // Removes a chunk; returns false when (size, address) was not in the index.
  virtual bool Erase(const FreeChunkKey& key) = 0;
  // Replaces a chunk's key with `new_key` (a chunk cut by a split): the same
  // as Erase(old_key) then Insert(new_key), which an index may do in one step.
  virtual void Replace(const FreeChunkKey& old_key,
                       const FreeChunkKey& new_key) {
    Erase(old_key);
    Insert(new_key);
  }
  virtual bool Contains(const FreeChunkKey& key) const = 0;
  virtual size_t Size() const = 0;

  // The smallest chunk with size >= min_size, lowest address first.
  virtual std::optional<FreeChunkKey> FindBestFit(uint64_t min_size) const = 0;
  // The same, among chunks `accept` returns true for, visited in (size,
  // address) order (the allocator filters by free time and alignment).
  virtual std::optional<FreeChunkKey> FindBestFitIf(uint64_t min_size,
                                                    Filter accept) const = 0;
  // The largest chunk (highest address among equals), if any.
  virtual std::optional<FreeChunkKey> Largest() const = 0;
};

// The fast index: one ordered set per bin and a bitmap of non-empty bins.
std::unique_ptr<BfcFreeIndex> MakeFastFreeIndex();

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_BFC_FREE_INDEX_H_
