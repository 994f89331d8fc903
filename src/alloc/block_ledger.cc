#include "tensormem/alloc/block_ledger.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_format.h"

namespace tensormem {

void BlockLedger::Add(const void* ptr, Block block) {
  blocks_.emplace(ptr, block);
  ++stats_.num_allocs;
  stats_.bytes_in_use += block.charged;
  stats_.peak_bytes_in_use =
      std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  stats_.largest_alloc_size =
      std::max<uint64_t>(stats_.largest_alloc_size, block.charged);
  stats_.pool_bytes = stats_.bytes_in_use;
  stats_.peak_pool_bytes = std::max(stats_.peak_pool_bytes, stats_.pool_bytes);
}

std::optional<BlockLedger::Block> BlockLedger::Take(const void* ptr) {
  auto it = blocks_.find(ptr);
  if (it == blocks_.end()) return std::nullopt;
  const Block block = it->second;
  blocks_.erase(it);
  stats_.bytes_in_use -= block.charged;
  stats_.pool_bytes = stats_.bytes_in_use;
  return block;
}

absl::Status BlockLedger::NotLiveError(const void* ptr,
                                       std::string_view owner) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "free of %p, which is not a live block of %s (never allocated through "
      "it, interior, or already freed)",
      ptr, owner));
}

void BlockLedger::Restore(const void* ptr, Block block) {
  blocks_.emplace(ptr, block);
  stats_.bytes_in_use += block.charged;
  stats_.pool_bytes = stats_.bytes_in_use;
}

std::optional<size_t> BlockLedger::RequestedSize(const void* ptr) const {
  auto it = blocks_.find(ptr);
  if (it == blocks_.end()) return std::nullopt;
  return it->second.requested;
}

std::optional<size_t> BlockLedger::ChargedSize(const void* ptr) const {
  auto it = blocks_.find(ptr);
  if (it == blocks_.end()) return std::nullopt;
  return it->second.charged;
}

void BlockLedger::ClearStats() {
  stats_.num_allocs = 0;
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
  stats_.largest_alloc_size = 0;
  stats_.peak_pool_bytes = stats_.pool_bytes;
}

}  // namespace tensormem
