// The fast free index's parts off the hot path (fast_free_index.h has the
// rest): bins moving between the array and the B-tree, filtered searches.
#include <algorithm>
#include <memory>
#include <optional>

#include "alloc/fast_free_index.h"

namespace tensormem {

namespace internal {

void FreeBin::InsertInTree(const FreeChunkKey& key) {
  if (!in_tree_) {
    for (uint32_t i = 0; i < count_; ++i) tree_.insert(At(i));
    count_ = 0;
    in_tree_ = true;
  }
  tree_.insert(key);
}

bool FreeBin::EraseFromTree(const FreeChunkKey& key) {
  if (tree_.erase(key) == 0) return false;
  if (tree_.size() < kBackToSmall) {
    for (const FreeChunkKey& kept : tree_) {
      keys_[count_] = Pack(kept);
      handles_[count_] = kept.handle;
      ++count_;
    }
    tree_.clear();
    in_tree_ = false;
  }
  return true;
}

std::optional<FreeChunkKey> FreeBin::FindFromIf(
    const FreeChunkKey& probe, BfcFreeIndex::Filter accept) const {
  if (in_tree_) {
    for (auto it = tree_.lower_bound(probe); it != tree_.end(); ++it) {
      if (accept(*it)) return *it;
    }
    return std::nullopt;
  }
  for (uint32_t i = LowerBound(Pack(probe)); i < count_; ++i) {
    const FreeChunkKey key = At(i);
    if (accept(key)) return key;
  }
  return std::nullopt;
}

std::optional<FreeChunkKey> FastFreeIndex::FindBestFitIf(uint64_t min_size,
                                                         Filter accept) const {
  int bin = bfc::BinNumForSize(min_size);
  FreeChunkKey probe{min_size, 0, 0};
  while (bin >= 0) {
    if (std::optional<FreeChunkKey> fit = bins_[bin].FindFromIf(probe, accept))
      return fit;
    bin = NextNonEmptyBin(bin);
    probe = FreeChunkKey{0, 0, 0};
  }
  return std::nullopt;
}

}  // namespace internal

std::unique_ptr<BfcFreeIndex> MakeFastFreeIndex() {
  return std::make_unique<internal::FastFreeIndex>();
}

}  // namespace tensormem
