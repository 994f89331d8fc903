// BlockLedger: the live blocks an allocator adaptor handed out, and the
// statistics they add up to.
//
// The system, limiting and tracking allocators keep the same books: each live
// block's requested and charged size by pointer, misuse (a pointer that is not
// live) reported as an error naming the allocator, and TF-named counters.
// Not thread-safe: the owner calls it under its own lock. A new adaptor can
// keep its books with it too.
//
//   BlockLedger ledger;
//   ledger.Add(ptr, {.requested = 100, .charged = 112});
//   std::optional<BlockLedger::Block> block = ledger.Take(ptr);
//   if (!block) return BlockLedger::NotLiveError(ptr, "system");
#ifndef TENSORMEM_ALLOC_BLOCK_LEDGER_H_
#define TENSORMEM_ALLOC_BLOCK_LEDGER_H_

#include <cstddef>
#include <optional>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "tensormem/alloc/allocator_stats.h"

namespace tensormem {

class BlockLedger {
 public:
  struct Block {
    size_t requested = 0;
    size_t charged = 0;  // what the block counts for in the statistics
  };

  // Records a new live block and counts it in stats().
  void Add(const void* ptr, Block block);
  // Removes `ptr`'s block and uncounts it; nullopt when `ptr` is not a live
  // block (never handed out, interior, or already freed).
  std::optional<Block> Take(const void* ptr);
  // The error for a free of `ptr` that Take refused, naming `owner`.
  static absl::Status NotLiveError(const void* ptr, std::string_view owner);
  // Puts back a block Take removed, as if it had never been taken (the
  // wrapped allocator refused the free).
  void Restore(const void* ptr, Block block);

  std::optional<size_t> RequestedSize(const void* ptr) const;
  std::optional<size_t> ChargedSize(const void* ptr) const;
  size_t num_live() const { return blocks_.size(); }

  // num_allocs, bytes_in_use and their peaks, largest_alloc_size; pool_bytes
  // is the bytes in use (an adaptor holds no pool of its own).
  const AllocatorStats& stats() const { return stats_; }
  // Keeps what is in use; peaks drop to it and counts restart.
  void ClearStats();

 private:
  absl::flat_hash_map<const void*, Block> blocks_;
  AllocatorStats stats_;
};

}  // namespace tensormem

#endif  // TENSORMEM_ALLOC_BLOCK_LEDGER_H_
