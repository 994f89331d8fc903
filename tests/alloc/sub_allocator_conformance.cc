// The SubAllocator contract (see sub_allocator_conformance.h), checked for
// every kind a test binary instantiates it with.
#include "alloc/sub_allocator_conformance.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <utility>

#include "gmock/gmock.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using ::testing::ElementsAre;

std::unique_ptr<SubAllocator> Make(const SubAllocatorConformanceParam& param) {
  return param.make({}, {});
}

TEST_P(SubAllocatorConformanceTest, ServesAlignedRegionsOfAtLeastTheSize) {
  std::unique_ptr<SubAllocator> upstream = Make(GetParam());
  ASSERT_NE(upstream, nullptr);
  for (size_t alignment :
       {size_t{0}, size_t{1}, size_t{256}, GetParam().max_alignment}) {
    for (size_t bytes : {size_t{1}, size_t{1000}, 3 * kMiB + 17}) {
      size_t received = 0;
      void* region = upstream->Alloc(bytes, alignment, &received);
      ASSERT_NE(region, nullptr) << alignment << " " << bytes;
      EXPECT_GE(received, bytes);
      if (alignment > 0) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(region) % alignment, 0u);
      }
      if (GetParam().host_accessible) {
        static_cast<char*>(region)[0] = 1;
        static_cast<char*>(region)[received - 1] = 2;
      }
      upstream->Free(region, received);
    }
  }
}

TEST_P(SubAllocatorConformanceTest, RefusesBadRequestsWithNothingReceived) {
  std::unique_ptr<SubAllocator> upstream = Make(GetParam());
  ASSERT_NE(upstream, nullptr);
  size_t received = 123;
  EXPECT_EQ(upstream->Alloc(0, 256, &received), nullptr);
  EXPECT_EQ(received, 0u);
  received = 123;
  EXPECT_EQ(upstream->Alloc(4096, 100, &received), nullptr);
  EXPECT_EQ(received, 0u);
  received = 123;
  EXPECT_EQ(upstream->Alloc(SIZE_MAX - 10, 256, &received), nullptr);
  EXPECT_EQ(received, 0u);
}

TEST_P(SubAllocatorConformanceTest, LiveRegionsNeverOverlap) {
  std::unique_ptr<SubAllocator> upstream = Make(GetParam());
  ASSERT_NE(upstream, nullptr);
  std::map<uintptr_t, size_t> live;
  auto take = [&](size_t bytes) {
    size_t received = 0;
    void* region = upstream->Alloc(bytes, 256, &received);
    ASSERT_NE(region, nullptr);
    const uintptr_t start = reinterpret_cast<uintptr_t>(region);
    auto after = live.lower_bound(start);
    if (after != live.end()) {
      EXPECT_LE(start + received, after->first);
    }
    if (after != live.begin()) {
      auto before = std::prev(after);
      EXPECT_LE(before->first + before->second, start);
    }
    live[start] = received;
  };
  for (size_t bytes : {kMiB, 2 * kMiB, kKiB * 4, 5 * kMiB, uint64_t{300}}) {
    take(bytes);
  }
  // Free every other region, then fill the holes again.
  bool drop = true;
  for (auto it = live.begin(); it != live.end(); drop = !drop) {
    if (!drop) {
      ++it;
      continue;
    }
    upstream->Free(reinterpret_cast<void*>(it->first), it->second);
    it = live.erase(it);
  }
  for (size_t bytes : {2 * kMiB, uint64_t{700}, 3 * kMiB}) take(bytes);
  for (const auto& [start, size] : live) {
    upstream->Free(reinterpret_cast<void*>(start), size);
  }
}

TEST_P(SubAllocatorConformanceTest, VisitorsSeeEveryRegionFreesInReverse) {
  std::vector<std::string> events;
  auto visitor = [&events](std::string name) {
    return [&events, name](void*, int, size_t bytes) {
      events.push_back(name + ":" + std::to_string(bytes));
    };
  };
  std::unique_ptr<SubAllocator> upstream =
      GetParam().make({visitor("alloc1"), visitor("alloc2")},
                      {visitor("free1"), visitor("free2")});
  ASSERT_NE(upstream, nullptr);
  size_t received = 0;
  void* region = upstream->Alloc(2 * kMiB, 256, &received);
  ASSERT_NE(region, nullptr);
  const std::string size = std::to_string(received);
  upstream->Free(region, received);
  EXPECT_THAT(events, ElementsAre("alloc1:" + size, "alloc2:" + size,
                                  "free2:" + size, "free1:" + size));
}

TEST_P(SubAllocatorConformanceTest, CoalescingKindsGrowContiguously) {
  std::unique_ptr<SubAllocator> upstream = Make(GetParam());
  ASSERT_NE(upstream, nullptr);
  if (!upstream->SupportsCoalescing()) GTEST_SKIP() << "does not coalesce";
  size_t first_size = 0, second_size = 0;
  char* first = static_cast<char*>(upstream->Alloc(2 * kMiB, 256, &first_size));
  char* second =
      static_cast<char*>(upstream->Alloc(4 * kMiB, 256, &second_size));
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(second, first + first_size);
  upstream->Free(second, second_size);
  upstream->Free(first, first_size);
}

}  // namespace
}  // namespace tensormem
