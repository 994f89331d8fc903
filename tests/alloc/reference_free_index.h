// ReferenceFreeIndex: the obviously-correct oracle for BfcFreeIndex.
//
// It keeps free chunks the way TensorFlow's BFC allocator does: one std::set
// per bin ordered by (size, address), and finds a fit by scanning bins from the
// request's bin, each from its smallest chunk, taking the first chunk that is
// large enough and accepted. Used only by tests (differential testing of the
// fast index) and benchmarks (the baseline the fast index is measured against).
//
//   BfcAllocator allocator(std::move(upstream), limit, options,
//                          std::make_unique<ReferenceFreeIndex>());
#ifndef TENSORMEM_TESTS_ALLOC_REFERENCE_FREE_INDEX_H_
#define TENSORMEM_TESTS_ALLOC_REFERENCE_FREE_INDEX_H_

#include <set>

#include "tensormem/alloc/bfc_free_index.h"
#include "tensormem/alloc/bfc_policy.h"

namespace tensormem {

class ReferenceFreeIndex final : public BfcFreeIndex {
 public:
  std::string Name() const override { return "reference"; }
  void Insert(const FreeChunkKey& key) override;
  bool Erase(const FreeChunkKey& key) override;
  bool Contains(const FreeChunkKey& key) const override;
  size_t Size() const override;
  std::optional<FreeChunkKey> FindBestFit(uint64_t min_size) const override;
  std::optional<FreeChunkKey> FindBestFitIf(uint64_t min_size,
                                            Filter accept) const override;
  std::optional<FreeChunkKey> Largest() const override;

 private:
  std::set<FreeChunkKey> bins_[bfc::kNumBins];
};

}  // namespace tensormem

#endif  // TENSORMEM_TESTS_ALLOC_REFERENCE_FREE_INDEX_H_
