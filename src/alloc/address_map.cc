#include "alloc/address_map.h"

#include <algorithm>
#include <cstring>

namespace tensormem::internal {

void LiveTable::SetInNewPage(uint64_t address, ChunkHandle handle) {
  const uint64_t top_index = address >> kTopShift;
  if (top_.empty()) base_top_ = top_index;
  if (top_index < base_top_) {
    // A block below every earlier one: the directory grows downwards.
    std::vector<std::unique_ptr<Mid>> grown(base_top_ - top_index +
                                            top_.size());
    std::move(top_.begin(), top_.end(),
              grown.begin() + (base_top_ - top_index));
    top_ = std::move(grown);
    base_top_ = top_index;
  }
  const uint64_t top = top_index - base_top_;
  if (top >= top_.size()) top_.resize(top + 1);
  if (top_[top] == nullptr) top_[top] = std::make_unique<Mid>();
  Leaf*& leaf = (*top_[top])[(address >> kMidShift) & kMidMask];
  if (leaf == nullptr) leaf = NewLeaf();
  (*leaf)[(address >> kSlotBits) & kLeafMask] = handle;
}

LiveTable::Leaf* LiveTable::NewLeaf() {
  if (slab_used_ == slab_capacity_) {
    // Slabs double up to the cap, so a small pool stays small.
    slab_capacity_ =
        std::clamp<size_t>(2 * slab_capacity_, 4, kMaxLeavesPerSlab);
    slabs_.push_back(std::make_unique_for_overwrite<Leaf[]>(slab_capacity_));
    slab_used_ = 0;
  }
  Leaf* leaf = &slabs_.back()[slab_used_++];
  // kInvalidChunk is all ones in every byte: one memset.
  static_assert(kInvalidChunk == UINT32_MAX);
  std::memset(leaf->data(), 0xFF, sizeof(Leaf));
  return leaf;
}

ChunkHandle AddressMap::NewHandle() {
  chunks_.emplace_back();
  return static_cast<ChunkHandle>(chunks_.size() - 1);
}

BfcRegion& AddressMap::AddRegion(void* ptr, uint64_t bytes,
                                 ChunkHandle first_chunk) {
  const uint64_t begin = reinterpret_cast<uint64_t>(ptr);
  auto it = std::upper_bound(
      regions_.begin(), regions_.end(), begin,
      [](uint64_t value, const BfcRegion& r) { return value < r.begin; });
  it = regions_.insert(
      it, BfcRegion{
              begin, begin + bytes, first_chunk, first_chunk, {{ptr, bytes}}});
  return *it;
}

BfcRegion* AddressMap::RegionEndingAt(uint64_t address) {
  for (BfcRegion& region : regions_) {
    if (region.end == address) return &region;
  }
  return nullptr;
}

void AddressMap::RemoveRegion(uint64_t begin) {
  std::erase_if(regions_,
                [begin](const BfcRegion& r) { return r.begin == begin; });
}

ChunkHandle AddressMap::FindContainingChunk(uint64_t address) const {
  const BfcRegion* region = RegionContaining(address);
  if (region == nullptr) return kInvalidChunk;
  for (ChunkHandle h = region->first_chunk; h != kInvalidChunk;
       h = chunks_[h].next) {
    if (address < chunks_[h].end()) return h;
  }
  return kInvalidChunk;
}

}  // namespace tensormem::internal
