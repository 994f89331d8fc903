// Thread tests of the simulated and vmm sub-allocators: 4 threads allocating
// and freeing must never be handed overlapping regions.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/alloc/vmm_sub_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

// Runs 4 threads that keep up to 16 regions each; returns the regions still
// live at the end, from all threads. With `touch`, each region's first and
// last byte are written (for upstreams whose memory is real).
std::vector<std::pair<uintptr_t, size_t>> Hammer(SubAllocator& upstream,
                                                 bool touch) {
  constexpr int kThreads = 4;
  std::vector<std::vector<std::pair<uintptr_t, size_t>>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&upstream, &seen, touch, t] {
      std::vector<std::pair<void*, size_t>> held;
      for (int i = 0; i < 2000; ++i) {
        size_t received = 0;
        void* region = upstream.Alloc(4096 * (1 + (i + t) % 7), 256, &received);
        if (region != nullptr) {
          if (touch) {
            static_cast<char*>(region)[0] = 1;
            static_cast<char*>(region)[received - 1] = 1;
          }
          held.emplace_back(region, received);
        }
        if (held.size() > 16) {
          upstream.Free(held.front().first, held.front().second);
          held.erase(held.begin());
        }
      }
      for (auto [region, bytes] : held) {
        seen[t].emplace_back(reinterpret_cast<uintptr_t>(region), bytes);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<std::pair<uintptr_t, size_t>> all;
  for (const auto& list : seen) all.insert(all.end(), list.begin(), list.end());
  std::sort(all.begin(), all.end());
  return all;
}

void ExpectDisjoint(const std::vector<std::pair<uintptr_t, size_t>>& sorted) {
  for (size_t i = 1; i < sorted.size(); ++i) {
    EXPECT_LE(sorted[i - 1].first + sorted[i - 1].second, sorted[i].first);
  }
}

TEST(SimulatedSubAllocatorTest, ThreadsNeverShareAnAddress) {
  SimulatedSubAllocator gpu(64 * kMiB);
  const auto live = Hammer(gpu, /*touch=*/false);
  ExpectDisjoint(live);
  EXPECT_EQ(live.size(), 4u * 16u);
  EXPECT_EQ(gpu.region_count(), live.size());
  EXPECT_EQ(gpu.misuse_count(), 0);
}

TEST(VmmSubAllocatorTest, ThreadsNeverShareAnAddress) {
  VmmSubAllocator vmm(64 * kMiB);
  const auto live = Hammer(vmm, /*touch=*/true);
  ExpectDisjoint(live);
  EXPECT_EQ(live.size(), 4u * 16u);
  uint64_t live_bytes = 0;
  for (auto [address, bytes] : live) live_bytes += bytes;
  EXPECT_EQ(vmm.committed_bytes(), live_bytes);
  EXPECT_EQ(vmm.misuse_count(), 0);
}

}  // namespace
}  // namespace tensormem
