// The BFC allocator's fast path: the policy decisions the engine makes inline
// agree with the policy's hooks, and the in-use table finds blocks (and
// refuses bad pointers) across regions far apart and in falling address order.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "alloc/reference_free_index.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/bfc_free_index.h"
#include "tensormem/alloc/bfc_policy.h"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

// Sizes from 256 B to 2^60 B around powers of two, multiples of 256.
std::vector<uint64_t> ProbeSizes() {
  std::vector<uint64_t> sizes;
  for (int bits = 8; bits <= 60; ++bits) {
    for (int64_t delta : {-256, 0, 256}) {
      const uint64_t size = (uint64_t{1} << bits) + delta;
      if (size >= 256) sizes.push_back(size);
    }
    sizes.push_back(3 * (uint64_t{1} << (bits - 1)));
  }
  return sizes;
}

void ExpectInlineMatchesHooks(const std::string& name,
                              const PolicyEnvironment& environment) {
  SCOPED_TRACE(name + " limit " + std::to_string(environment.memory_limit) +
               " fraction " +
               std::to_string(environment.fragmentation_fraction));
  absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy =
      CreatePolicy(name, environment);
  ASSERT_TRUE(policy.ok()) << policy.status();
  const std::optional<AllocationPolicy::InlineDecisions> decisions =
      (*policy)->Inline();
  ASSERT_TRUE(decisions.has_value());
  EXPECT_EQ((*policy)->NumPools(), 1);
  for (uint64_t bytes :
       {uint64_t{1}, uint64_t{255}, uint64_t{256}, uint64_t{257},
        uint64_t{1} << 40, UINT64_MAX - 10, UINT64_MAX - 255, UINT64_MAX}) {
    EXPECT_EQ((*policy)->RoundedSize(bytes), bfc::RoundedBytes(bytes)) << bytes;
  }
  const std::vector<uint64_t> sizes = ProbeSizes();
  for (uint64_t rounded : sizes) {
    EXPECT_EQ((*policy)->PoolFor(rounded), 0);
    for (uint64_t chunk : sizes) {
      if (chunk < rounded) continue;
      EXPECT_TRUE((*policy)->MayServe(chunk, rounded));
      const bool inline_split =
          (decisions->split_at_double && chunk >= 2 * rounded) ||
          chunk - rounded >= decisions->split_tail_bytes;
      ASSERT_EQ((*policy)->ShouldSplit(chunk, rounded, 0), inline_split)
          << "chunk " << chunk << " rounded " << rounded;
    }
  }
}

TEST(BfcInlineDecisionsTest, AgreeWithTheHooks) {
  for (const char* name : {"tf", "tight"}) {
    for (uint64_t limit : {uint64_t{1} << 20, 16 * kGiB, uint64_t{1} << 50}) {
      for (double fraction : {0.0, 1e-6, 0.01, 0.5, 1.0, 3.0}) {
        ExpectInlineMatchesHooks(name, {.memory_limit = limit,
                                        .allow_growth = true,
                                        .fragmentation_fraction = fraction});
      }
    }
  }
}

TEST(BfcInlineDecisionsTest, PoliciesWithPoolsUseTheirHooks) {
  absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy =
      CreatePolicy("pytorch", {.memory_limit = 16 * kGiB});
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_FALSE((*policy)->Inline().has_value());
}

// Replace (a split chunk's tail taking its place, or a chunk growing) against
// the reference's erase-then-insert: within a bin, across bins, and in bins
// grown into trees. Every key carries its own handle, which the fast index
// stores apart from the (size, address) it sorts by: the answers' handles must
// match too.
TEST(BfcFreeIndexReplaceTest, MatchesEraseThenInsert) {
  std::unique_ptr<BfcFreeIndex> fast = MakeFastFreeIndex();
  ReferenceFreeIndex reference;
  std::mt19937_64 random(11);
  std::vector<FreeChunkKey> keys;
  uint64_t next_address = 0;
  uint32_t next_handle = 1;
  auto new_key = [&] {
    // Mostly one or two bins, so some grow past the inline array.
    const uint64_t size =
        256 * (1 + random() % (random() % 4 == 0 ? 4096 : 24));
    next_address += 1 << 30;
    return FreeChunkKey{size, next_address, next_handle++};
  };
  for (int step = 0; step < 20000; ++step) {
    const uint64_t choice = random() % 10;
    if (keys.empty() || choice < 4) {
      keys.push_back(new_key());
      fast->Insert(keys.back());
      reference.Insert(keys.back());
    } else if (choice < 6) {
      const size_t victim = random() % keys.size();
      ASSERT_TRUE(fast->Erase(keys[victim]));
      reference.Erase(keys[victim]);
      keys[victim] = keys.back();
      keys.pop_back();
    } else if (choice < 8) {
      // Grow a chunk in place (its key moves up in the order).
      FreeChunkKey& key = keys[random() % keys.size()];
      const FreeChunkKey grown{key.size + 256 * (1 + random() % 64),
                               key.address, next_handle++};
      fast->Replace(key, grown);
      reference.Replace(key, grown);
      key = grown;
    } else {
      // Cut a chunk: the tail keeps the end, so its address grows.
      FreeChunkKey& key = keys[random() % keys.size()];
      if (key.size <= 256) continue;
      const uint64_t cut = 256 * (1 + random() % (key.size / 256 - 1));
      const FreeChunkKey tail{key.size - cut, key.address + cut, next_handle++};
      fast->Replace(key, tail);
      reference.Replace(key, tail);
      key = tail;
    }
    ASSERT_EQ(fast->Size(), reference.Size()) << "step " << step;
    const uint64_t probe = 256 * (1 + random() % 5000);
    const std::optional<FreeChunkKey> a = fast->FindBestFit(probe);
    const std::optional<FreeChunkKey> b = reference.FindBestFit(probe);
    ASSERT_EQ(a.has_value(), b.has_value()) << "step " << step;
    if (a) {
      ASSERT_EQ(*a, *b) << "step " << step;
      ASSERT_EQ(a->handle, b->handle) << "step " << step;
    }
    // A filtered search visits keys in the same order (every other handle).
    auto odd = [](const FreeChunkKey& key) { return key.handle % 2 == 1; };
    const std::optional<FreeChunkKey> c = fast->FindBestFitIf(probe, odd);
    const std::optional<FreeChunkKey> d = reference.FindBestFitIf(probe, odd);
    ASSERT_EQ(c.has_value(), d.has_value()) << "step " << step;
    if (c) {
      ASSERT_EQ(c->handle, d->handle) << "step " << step;
    }
    const std::optional<FreeChunkKey> e = fast->Largest();
    const std::optional<FreeChunkKey> f = reference.Largest();
    ASSERT_EQ(e.has_value(), f.has_value()) << "step " << step;
    if (e) {
      ASSERT_EQ(e->handle, f->handle) << "step " << step;
    }
  }
  for (const FreeChunkKey& key : keys) EXPECT_TRUE(fast->Contains(key));
}

// Hands out regions of made-up addresses, each 1 TiB below the previous one,
// starting high. The allocator never touches its memory, so nothing is
// mapped.
class FallingSubAllocator final : public SubAllocator {
 public:
  void* Alloc(size_t bytes, size_t /*alignment*/, size_t* received) override {
    next_ -= uint64_t{1} << 40;
    *received = bytes;
    return reinterpret_cast<void*>(next_);
  }
  void Free(void*, size_t) override {}
  bool SupportsCoalescing() const override { return false; }
  MemoryKind GetMemoryKind() const override { return MemoryKind::kSimulated; }
  std::string Name() const override { return "falling"; }

 private:
  uint64_t next_ = uint64_t{1} << 46;
};

TEST(BfcLiveTableTest, RegionsFarApartInFallingOrder) {
  BfcAllocator::Options options;
  options.allow_retry_on_failure = false;
  options.log_failures = false;
  BfcAllocator allocator(std::make_unique<FallingSubAllocator>(), 64 * kMiB,
                         options);
  std::mt19937_64 random(5);
  std::vector<void*> live;
  // Requests growing past each region's size force new, lower regions.
  for (int i = 0; i < 300; ++i) {
    const size_t bytes = 256 + random() % (uint64_t{1} << (8 + i / 20));
    void* p = allocator.AllocateRaw(256, bytes);
    if (p != nullptr) live.push_back(p);
  }
  const AllocatorStats before = *allocator.GetStats();
  ASSERT_GE(before.num_regions, 3);
  ASSERT_TRUE(allocator.CheckInvariants().ok());
  const uint64_t lowest =
      reinterpret_cast<uint64_t>(*std::min_element(live.begin(), live.end()));
  const uint64_t highest =
      reinterpret_cast<uint64_t>(*std::max_element(live.begin(), live.end()));
  for (uint64_t bad : {lowest - 256, lowest - (uint64_t{1} << 39),
                       highest + (uint64_t{1} << 39), lowest + 1, lowest + 128,
                       uint64_t{256}, uint64_t{1} << 47}) {
    EXPECT_FALSE(allocator.CheckedDeallocate(reinterpret_cast<void*>(bad)).ok())
        << std::hex << bad;
  }
  EXPECT_EQ(allocator.GetStats()->bytes_in_use, before.bytes_in_use);
  std::shuffle(live.begin(), live.end(), random);
  for (void* p : live) {
    ASSERT_TRUE(allocator.AllocatedSize(p).has_value());
    ASSERT_TRUE(allocator.CheckedDeallocate(p).ok());
    EXPECT_FALSE(allocator.CheckedDeallocate(p).ok());  // double free
    EXPECT_FALSE(allocator.AllocatedSize(p).has_value());
  }
  EXPECT_EQ(allocator.GetStats()->bytes_in_use, 0);
  EXPECT_TRUE(allocator.CheckInvariants().ok());
}

}  // namespace
}  // namespace tensormem
