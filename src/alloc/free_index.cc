// The fast free index: per-bin B-trees keyed by (size, address) plus a bitmap
// of non-empty bins.
//
// TensorFlow scans a bin's ordered set from its smallest chunk, O(chunks
// smaller than the request in that bin). Here the best fit is a lower_bound in
// the request's bin, or, when that bin has nothing large enough, the first
// chunk of the next non-empty bin (one bit scan): O(log n). Sizes grow with the
// bin number, so visiting bins in order and each bin in (size, address) order
// visits chunks in global (size, address) order, which is why the answers are
// identical to the scan, filters included. B-tree nodes hold many keys, so
// inserts and erases rarely allocate, unlike a node-per-key std::set.
//
// Each bin also holds a sentinel key above every real one. A bin therefore
// never empties (a B-tree frees its root when it does, and allocates it again
// on the next insert: a malloc/free pair on every alloc/free cycle), and a
// lower_bound always lands on an element, never on the end of a leaf.
#include <bit>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>

#include "absl/container/btree_set.h"
#include "tensormem/alloc/bfc_free_index.h"
#include "tensormem/alloc/bfc_policy.h"

namespace tensormem {
namespace {

constexpr FreeChunkKey kSentinel{UINT64_MAX, UINT64_MAX, UINT32_MAX};

class FastFreeIndex final : public BfcFreeIndex {
 public:
  FastFreeIndex() {
    for (Bin& bin : bins_) bin.insert(kSentinel);
  }

  std::string Name() const override { return "fast"; }

  void Insert(const FreeChunkKey& key) override {
    const int bin = bfc::BinNumForSize(key.size);
    bins_[bin].insert(key);
    non_empty_bins_ |= uint32_t{1} << bin;
    ++size_;
  }

  bool Erase(const FreeChunkKey& key) override {
    const int bin = bfc::BinNumForSize(key.size);
    if (bins_[bin].erase(key) == 0) return false;
    if (bins_[bin].size() == 1) non_empty_bins_ &= ~(uint32_t{1} << bin);
    --size_;
    return true;
  }

  bool Contains(const FreeChunkKey& key) const override {
    return bins_[bfc::BinNumForSize(key.size)].contains(key);
  }

  size_t Size() const override { return size_; }

  std::optional<FreeChunkKey> FindBestFit(uint64_t min_size) const override {
    const int first_bin = bfc::BinNumForSize(min_size);
    const FreeChunkKey& fit =
        *bins_[first_bin].lower_bound(FreeChunkKey{min_size, 0, 0});
    if (fit.handle != kSentinel.handle) return fit;
    const int next_bin = NextNonEmptyBin(first_bin);
    if (next_bin < 0) return std::nullopt;
    return *bins_[next_bin].begin();
  }

  std::optional<FreeChunkKey> FindBestFitIf(uint64_t min_size,
                                            Filter accept) const override {
    int bin_num = bfc::BinNumForSize(min_size);
    auto it = bins_[bin_num].lower_bound(FreeChunkKey{min_size, 0, 0});
    while (true) {
      for (; it->handle != kSentinel.handle; ++it) {
        if (accept(*it)) return *it;
      }
      bin_num = NextNonEmptyBin(bin_num);
      if (bin_num < 0) return std::nullopt;
      it = bins_[bin_num].begin();
    }
  }

  std::optional<FreeChunkKey> Largest() const override {
    if (non_empty_bins_ == 0) return std::nullopt;
    const int last_bin = 31 - std::countl_zero(non_empty_bins_);
    return *std::next(bins_[last_bin].rbegin());
  }

 private:
  using Bin = absl::btree_set<FreeChunkKey>;

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
