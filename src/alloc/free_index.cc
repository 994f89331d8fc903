// The fast free index's parts off the hot path (fast_free_index.h has the
// rest): bins moving between the array and the B-tree.
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

}  // namespace internal

std::unique_ptr<BfcFreeIndex> MakeFastFreeIndex() {
  return std::make_unique<internal::FastFreeIndex>();
}

}  // namespace tensormem
