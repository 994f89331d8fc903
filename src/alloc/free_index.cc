// The fast free index: one ordered bin per size class plus a bitmap of
// non-empty bins.
//
// TensorFlow scans a bin's ordered set from its smallest chunk, O(chunks
// smaller than the request in that bin). Here the best fit is a lower_bound in
// the request's bin, or, when that bin has nothing large enough, the first
// chunk of the next non-empty bin (one bit scan): O(log n). Sizes grow with the
// bin number, so visiting bins in order and each bin in (size, address) order
// visits chunks in global (size, address) order, which is why the answers are
// identical to the scan, filters included.
//
// A bin is usually small (best fit with coalescing leaves few free chunks), so
// it starts as a sorted array with room for kSmallCapacity keys: a search is a
// binary search over one or two cache lines and an insert moves a few keys,
// with no allocation at all. A bin that outgrows the array moves into a B-tree
// and comes back once it shrinks well below the array's size; the gap between
// the two thresholds keeps a bin near the limit from moving back and forth.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/container/btree_set.h"
#include "tensormem/alloc/bfc_free_index.h"
#include "tensormem/alloc/bfc_policy.h"

namespace tensormem {
namespace {

class Bin {
 public:
  static constexpr size_t kSmallCapacity = 32;
  static constexpr size_t kBackToSmall = 8;

  size_t size() const { return in_tree_ ? tree_.size() : small_size_; }

  void Insert(const FreeChunkKey& key) {
    if (!in_tree_ && small_size_ == kSmallCapacity) {
      tree_.insert(small_.begin(), small_.end());
      small_size_ = 0;
      in_tree_ = true;
    }
    if (in_tree_) {
      tree_.insert(key);
      return;
    }
    // One step of insertion sort: bins hold a few keys, and the new one is
    // often the largest.
    size_t i = small_size_++;
    for (; i > 0 && key < small_[i - 1]; --i) small_[i] = small_[i - 1];
    small_[i] = key;
  }

  bool Erase(const FreeChunkKey& key) {
    if (!in_tree_) {
      const FreeChunkKey* begin = small_.data();
      const FreeChunkKey* end = begin + small_size_;
      const FreeChunkKey* it = std::lower_bound(begin, end, key);
      if (it == end || !(*it == key)) return false;
      for (size_t i = it - begin + 1; i < small_size_; ++i)
        small_[i - 1] = small_[i];
      --small_size_;
      return true;
    }
    if (tree_.erase(key) == 0) return false;
    if (tree_.size() < kBackToSmall) {
      std::copy(tree_.begin(), tree_.end(), small_.begin());
      small_size_ = tree_.size();
      tree_.clear();
      in_tree_ = false;
    }
    return true;
  }

  // Replace in place, moving the keys between the two positions; false (and
  // no change) when the bin is a tree or holds no `old_key`.
  bool Replace(const FreeChunkKey& old_key, const FreeChunkKey& new_key) {
    if (in_tree_) return false;
    const FreeChunkKey* begin = small_.data();
    const FreeChunkKey* it =
        std::lower_bound(begin, begin + small_size_, old_key);
    if (it == begin + small_size_ || !(*it == old_key)) return false;
    size_t i = it - begin;
    for (; i > 0 && new_key < small_[i - 1]; --i) small_[i] = small_[i - 1];
    for (; i + 1 < small_size_ && small_[i + 1] < new_key; ++i)
      small_[i] = small_[i + 1];
    small_[i] = new_key;
    return true;
  }

  bool Contains(const FreeChunkKey& key) const {
    if (in_tree_) return tree_.contains(key);
    return std::binary_search(small_.data(), small_.data() + small_size_, key);
  }

  // The first key >= `probe` that `accept` takes, in order.
  template <typename Accept>
  std::optional<FreeChunkKey> FindFrom(const FreeChunkKey& probe,
                                       Accept accept) const {
    if (in_tree_) return FindIn(tree_.lower_bound(probe), tree_.end(), accept);
    const FreeChunkKey* begin = small_.data();
    const FreeChunkKey* end = begin + small_size_;
    return FindIn(std::lower_bound(begin, end, probe), end, accept);
  }

  const FreeChunkKey& front() const {
    return in_tree_ ? *tree_.begin() : small_[0];
  }
  const FreeChunkKey& back() const {
    return in_tree_ ? *tree_.rbegin() : small_[small_size_ - 1];
  }

 private:
  template <typename Iterator, typename Accept>
  static std::optional<FreeChunkKey> FindIn(Iterator it, Iterator end,
                                            Accept accept) {
    for (; it != end; ++it) {
      if (accept(*it)) return *it;
    }
    return std::nullopt;
  }

  bool in_tree_ = false;
  // Sorted, inline (no pointer to follow); used while !in_tree_.
  uint32_t small_size_ = 0;
  std::array<FreeChunkKey, kSmallCapacity> small_;
  absl::btree_set<FreeChunkKey> tree_;
};

class FastFreeIndex final : public BfcFreeIndex {
 public:
  std::string Name() const override { return "fast"; }

  void Insert(const FreeChunkKey& key) override {
    const int bin = bfc::BinNumForSize(key.size);
    bins_[bin].Insert(key);
    non_empty_bins_ |= uint32_t{1} << bin;
    ++size_;
  }

  bool Erase(const FreeChunkKey& key) override {
    const int bin = bfc::BinNumForSize(key.size);
    if (!bins_[bin].Erase(key)) return false;
    if (bins_[bin].size() == 0) non_empty_bins_ &= ~(uint32_t{1} << bin);
    --size_;
    return true;
  }

  void Replace(const FreeChunkKey& old_key,
               const FreeChunkKey& new_key) override {
    const int bin = bfc::BinNumForSize(old_key.size);
    if (bin == bfc::BinNumForSize(new_key.size) &&
        bins_[bin].Replace(old_key, new_key)) {
      return;
    }
    Erase(old_key);
    Insert(new_key);
  }

  bool Contains(const FreeChunkKey& key) const override {
    return bins_[bfc::BinNumForSize(key.size)].Contains(key);
  }

  size_t Size() const override { return size_; }

  std::optional<FreeChunkKey> FindBestFit(uint64_t min_size) const override {
    const int first_bin = bfc::BinNumForSize(min_size);
    if (std::optional<FreeChunkKey> fit = bins_[first_bin].FindFrom(
            FreeChunkKey{min_size, 0, 0},
            [](const FreeChunkKey&) { return true; })) {
      return fit;
    }
    const int next_bin = NextNonEmptyBin(first_bin);
    if (next_bin < 0) return std::nullopt;
    return bins_[next_bin].front();
  }

  std::optional<FreeChunkKey> FindBestFitIf(uint64_t min_size,
                                            Filter accept) const override {
    int bin = bfc::BinNumForSize(min_size);
    FreeChunkKey probe{min_size, 0, 0};
    while (bin >= 0) {
      if (std::optional<FreeChunkKey> fit = bins_[bin].FindFrom(probe, accept))
        return fit;
      bin = NextNonEmptyBin(bin);
      probe = FreeChunkKey{0, 0, 0};
    }
    return std::nullopt;
  }

  std::optional<FreeChunkKey> Largest() const override {
    if (non_empty_bins_ == 0) return std::nullopt;
    return bins_[31 - std::countl_zero(non_empty_bins_)].back();
  }

 private:
  // The first non-empty bin after `bin`, or -1.
  int NextNonEmptyBin(int bin) const {
    const uint32_t later = non_empty_bins_ & ~((uint32_t{2} << bin) - 1);
    return later == 0 ? -1 : std::countr_zero(later);
  }

  Bin bins_[bfc::kNumBins];
  uint32_t non_empty_bins_ = 0;
  size_t size_ = 0;
};

}  // namespace

std::unique_ptr<BfcFreeIndex> MakeFastFreeIndex() {
  return std::make_unique<FastFreeIndex>();
}

}  // namespace tensormem
