// FastFreeIndex: the BFC allocator's default free index (its "bins").
//
// TensorFlow scans a bin's ordered set from its smallest chunk, O(chunks
// smaller than the request in that bin). Here the best fit is the first key
// >= the request in the request's bin, or, when that bin has nothing large
// enough, the first chunk of the next non-empty bin (one bit scan). Sizes grow
// with the bin number, so visiting bins in order and each bin in (size,
// address) order visits chunks in global (size, address) order, which is why
// the answers are identical to the scan, filters included.
//
// A bin is usually small (best fit with coalescing leaves few free chunks), so
// it is a sorted array of up to kSmallCapacity keys, stored as structure of
// arrays: (size, address) packed into one 128-bit number, so that a key
// compares in one comparison, and the handles apart. A bin that outgrows the
// array moves into a B-tree and comes back once it shrinks well below the
// array's size; the gap between the two thresholds keeps a bin near the limit
// from moving back and forth.
//
// The class is in a header, and final, so that the engine (BfcCore), which
// holds it by its concrete type, calls it inline; other indexes go through the
// virtual interface.
//
//   FastFreeIndex index;
//   index.Insert({.size = 4096, .address = 0x10000, .handle = 7});
//   std::optional<FreeChunkKey> fit = index.FindBestFit(1024);  // the 4096
#ifndef TENSORMEM_SRC_ALLOC_FAST_FREE_INDEX_H_
#define TENSORMEM_SRC_ALLOC_FAST_FREE_INDEX_H_

#include <bit>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/btree_set.h"
#include "tensormem/alloc/bfc_free_index.h"
#include "tensormem/alloc/bfc_policy.h"

namespace tensormem::internal {

// A free key and where it lies in the index, so that the update that follows
// a best fit need not search for it again. Flat, without padding and without
// an optional around it: a copy that reads padding after narrower stores
// would wait for them (a failed store forwarding costs ~12 cycles).
struct FreeSlot {
  static constexpr uint16_t kInTree = UINT16_MAX;
  uint64_t size = 0;  // 0: no key
  uint64_t address = 0;
  uint32_t handle = 0;
  uint16_t bin = 0;
  uint16_t slot = kInTree;  // in the bin's array; kInTree for a tree bin

  bool found() const { return size != 0; }
  FreeChunkKey key() const { return {size, address, handle}; }
};

class FreeBin {
 public:
  static constexpr uint32_t kSmallCapacity = 32;
  static constexpr uint32_t kBackToSmall = 8;

  size_t size() const { return in_tree_ ? tree_.size() : count_; }

  [[gnu::always_inline]] void Insert(const FreeChunkKey& key) {
    if (in_tree_ || count_ == kSmallCapacity) {
      InsertInTree(key);
      return;
    }
    // One step of insertion sort: the new key is often the largest.
    const Packed packed = Pack(key);
    uint32_t i = count_++;
    for (; i > 0 && packed < keys_[i - 1]; --i) MoveSlot(i - 1, i);
    keys_[i] = packed;
    handles_[i] = key.handle;
  }

  [[gnu::always_inline]] bool Erase(const FreeChunkKey& key) {
    if (in_tree_) return EraseFromTree(key);
    const Packed packed = Pack(key);
    const uint32_t i = LowerBound(packed);
    if (i == count_ || keys_[i] != packed) return false;
    EraseAt(i);
    return true;
  }
  // Erase of the key in array slot `i`.
  [[gnu::always_inline]] void EraseAt(uint32_t i) {
    for (uint32_t j = i + 1; j < count_; ++j) MoveSlot(j, j - 1);
    --count_;
  }

  // Replaces `old_key` by `new_key` in place, moving the keys between the two
  // positions; false (and no change) when the bin is a tree or holds no
  // `old_key`.
  [[gnu::always_inline]] bool Replace(const FreeChunkKey& old_key,
                                      const FreeChunkKey& new_key) {
    if (in_tree_) return false;
    const Packed old_packed = Pack(old_key);
    uint32_t i = LowerBound(old_packed);
    if (i == count_ || keys_[i] != old_packed) return false;
    ReplaceAt(i, new_key);
    return true;
  }
  // Replace of the key in array slot `i`.
  [[gnu::always_inline]] void ReplaceAt(uint32_t i,
                                        const FreeChunkKey& new_key) {
    const Packed packed = Pack(new_key);
    for (; i > 0 && packed < keys_[i - 1]; --i) MoveSlot(i - 1, i);
    for (; i + 1 < count_ && keys_[i + 1] < packed; ++i) MoveSlot(i + 1, i);
    keys_[i] = packed;
    handles_[i] = new_key.handle;
  }

  bool Contains(const FreeChunkKey& key) const {
    if (in_tree_) return tree_.contains(key);
    const uint32_t i = LowerBound(Pack(key));
    return i < count_ && keys_[i] == Pack(key);
  }

  // The first key with size >= `min_size` and its slot, if any (`bin` left
  // to the caller).
  [[gnu::always_inline]] FreeSlot FindFrom(uint64_t min_size) const {
    if (in_tree_) {
      auto it = tree_.lower_bound(FreeChunkKey{min_size, 0, 0});
      if (it == tree_.end()) return FreeSlot{};
      return InTree(*it);
    }
    const uint32_t i = LowerBound(Packed{min_size} << 64);
    if (i == count_) return FreeSlot{};
    return AtSlot(i);
  }

  // The first key >= `probe` that `accept` takes, in order.
  template <typename Accept>
  std::optional<FreeChunkKey> FindFromIf(const FreeChunkKey& probe,
                                         const Accept& accept) const {
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

  [[gnu::always_inline]] FreeSlot front() const {
    return in_tree_ ? InTree(*tree_.begin()) : AtSlot(0);
  }
  FreeChunkKey back() const {
    return in_tree_ ? *tree_.rbegin() : At(count_ - 1);
  }

 private:
  // (size, address) as one number: the order of FreeChunkKey in one compare.
  using Packed = unsigned __int128;
  static Packed Pack(const FreeChunkKey& key) {
    return (Packed{key.size} << 64) | key.address;
  }
  FreeSlot AtSlot(uint32_t i) const {
    return {.size = static_cast<uint64_t>(keys_[i] >> 64),
            .address = static_cast<uint64_t>(keys_[i]),
            .handle = handles_[i],
            .slot = static_cast<uint16_t>(i)};
  }
  static FreeSlot InTree(const FreeChunkKey& key) {
    return {.size = key.size, .address = key.address, .handle = key.handle};
  }
  FreeChunkKey At(uint32_t i) const {
    return {static_cast<uint64_t>(keys_[i] >> 64),
            static_cast<uint64_t>(keys_[i]), handles_[i]};
  }
  void MoveSlot(uint32_t from, uint32_t to) {
    keys_[to] = keys_[from];
    handles_[to] = handles_[from];
  }
  // The first position whose key is >= `packed`. A linear scan: bins hold a
  // few keys, and an insert or erase moves O(keys) anyway.
  uint32_t LowerBound(Packed packed) const {
    uint32_t i = 0;
    while (i < count_ && keys_[i] < packed) ++i;
    return i;
  }
  // free_index.cc: a full array moves into the tree, a small tree back.
  void InsertInTree(const FreeChunkKey& key);
  bool EraseFromTree(const FreeChunkKey& key);

  bool in_tree_ = false;
  uint32_t count_ = 0;  // keys in the array, while !in_tree_
  Packed keys_[kSmallCapacity];
  uint32_t handles_[kSmallCapacity];
  absl::btree_set<FreeChunkKey> tree_;
};

class FastFreeIndex final : public BfcFreeIndex {
 public:
  std::string Name() const override { return "fast"; }

  [[gnu::always_inline]] void Insert(const FreeChunkKey& key) override {
    const int bin = bfc::BinNumForSize(key.size);
    bins_[bin].Insert(key);
    non_empty_bins_ |= uint32_t{1} << bin;
    ++size_;
  }

  [[gnu::always_inline]] bool Erase(const FreeChunkKey& key) override {
    const int bin = bfc::BinNumForSize(key.size);
    if (!bins_[bin].Erase(key)) return false;
    NoteErased(bin);
    return true;
  }

  // Always inline: the engine calls it on nearly every allocation and free,
  // and a call's saving and restoring of registers costs as much as its work.
  [[gnu::always_inline]] void Replace(const FreeChunkKey& old_key,
                                      const FreeChunkKey& new_key) override {
    const int old_bin = bfc::BinNumForSize(old_key.size);
    const int new_bin = bfc::BinNumForSize(new_key.size);
    if (old_bin == new_bin && bins_[old_bin].Replace(old_key, new_key)) return;
    Erase(old_key);
    Insert(new_key);
  }

  bool Contains(const FreeChunkKey& key) const override {
    return bins_[bfc::BinNumForSize(key.size)].Contains(key);
  }

  size_t Size() const override { return size_; }

  [[gnu::always_inline]] std::optional<FreeChunkKey> FindBestFit(
      uint64_t min_size) const override {
    const FreeSlot fit = FindBestFitSlot(min_size);
    if (!fit.found()) return std::nullopt;
    return fit.key();
  }
  // FindBestFit with the fit's place, for ReplaceSlot and EraseSlot; a slot
  // not found() when nothing fits.
  [[gnu::always_inline]] FreeSlot FindBestFitSlot(uint64_t min_size) const {
    const int first_bin = bfc::BinNumForSize(min_size);
    FreeSlot fit = bins_[first_bin].FindFrom(min_size);
    if (fit.found()) {
      fit.bin = static_cast<uint16_t>(first_bin);
      return fit;
    }
    const int next_bin = NextNonEmptyBin(first_bin);
    if (next_bin < 0) return fit;
    fit = bins_[next_bin].front();
    fit.bin = static_cast<uint16_t>(next_bin);
    return fit;
  }
  // Replace and Erase of `fit` from FindBestFitSlot, with no update since.
  [[gnu::always_inline]] void ReplaceSlot(const FreeSlot& fit,
                                          const FreeChunkKey& new_key) {
    if (fit.slot == FreeSlot::kInTree) {
      Replace(fit.key(), new_key);
    } else if (bfc::BinNumForSize(new_key.size) == fit.bin) {
      bins_[fit.bin].ReplaceAt(fit.slot, new_key);
    } else {
      EraseSlot(fit);
      Insert(new_key);
    }
  }
  [[gnu::always_inline]] void EraseSlot(const FreeSlot& fit) {
    if (fit.slot == FreeSlot::kInTree) {
      Erase(fit.key());
      return;
    }
    bins_[fit.bin].EraseAt(fit.slot);
    NoteErased(fit.bin);
  }

  std::optional<FreeChunkKey> FindBestFitIf(uint64_t min_size,
                                            Filter accept) const override {
    return FindBestFitWhere(min_size, accept);
  }
  // FindBestFitIf with the filter inline (no indirect call per key).
  template <typename Accept>
  std::optional<FreeChunkKey> FindBestFitWhere(uint64_t min_size,
                                               const Accept& accept) const {
    int bin = bfc::BinNumForSize(min_size);
    FreeChunkKey probe{min_size, 0, 0};
    while (bin >= 0) {
      if (std::optional<FreeChunkKey> fit =
              bins_[bin].FindFromIf(probe, accept))
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
  // The bookkeeping after a key left `bin`.
  [[gnu::always_inline]] void NoteErased(int bin) {
    if (bins_[bin].size() == 0) non_empty_bins_ &= ~(uint32_t{1} << bin);
    --size_;
  }

  FreeBin bins_[bfc::kNumBins];
  uint32_t non_empty_bins_ = 0;
  size_t size_ = 0;
};

}  // namespace tensormem::internal

#endif  // TENSORMEM_SRC_ALLOC_FAST_FREE_INDEX_H_
