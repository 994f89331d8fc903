#include "alloc/reference_free_index.h"

namespace tensormem {

void ReferenceFreeIndex::Insert(const FreeChunkKey& key) {
  bins_[bfc::BinNumForSize(key.size)].insert(key);
}

bool ReferenceFreeIndex::Erase(const FreeChunkKey& key) {
  return bins_[bfc::BinNumForSize(key.size)].erase(key) == 1;
}

bool ReferenceFreeIndex::Contains(const FreeChunkKey& key) const {
  return bins_[bfc::BinNumForSize(key.size)].count(key) == 1;
}

size_t ReferenceFreeIndex::Size() const {
  size_t total = 0;
  for (const auto& bin : bins_) total += bin.size();
  return total;
}

std::optional<FreeChunkKey> ReferenceFreeIndex::FindBestFit(
    uint64_t min_size) const {
  // Written out rather than through FindBestFitIf, so the benchmarks'
  // baseline pays no call per visited chunk, as TensorFlow's scan does not.
  for (int bin = bfc::BinNumForSize(min_size); bin < bfc::kNumBins; ++bin) {
    for (const FreeChunkKey& key : bins_[bin]) {
      if (key.size >= min_size) return key;
    }
  }
  return std::nullopt;
}

std::optional<FreeChunkKey> ReferenceFreeIndex::FindBestFitIf(
    uint64_t min_size, Filter accept) const {
  for (int bin = bfc::BinNumForSize(min_size); bin < bfc::kNumBins; ++bin) {
    for (const FreeChunkKey& key : bins_[bin]) {
      if (key.size >= min_size && accept(key)) return key;
    }
  }
  return std::nullopt;
}

std::optional<FreeChunkKey> ReferenceFreeIndex::Largest() const {
  for (int bin = bfc::kNumBins - 1; bin >= 0; --bin) {
    if (!bins_[bin].empty()) return *bins_[bin].rbegin();
  }
  return std::nullopt;
}

}  // namespace tensormem
