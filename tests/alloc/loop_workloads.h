// Synthetic loops for the planned policy's tests: a training-like iteration
// (activations kept for the backward pass, temporaries, gradients), a driver
// that runs calls through any allocator, and a checker that no two live
// blocks overlap.
#ifndef TENSORMEM_TESTS_ALLOC_LOOP_WORKLOADS_H_
#define TENSORMEM_TESTS_ALLOC_LOOP_WORKLOADS_H_

#include <cstdint>
#include <map>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tensormem/alloc/allocator.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/alloc/planned_allocator.h"

namespace tensormem::testing {

// An allocator of `policy` (with `config`) from the specification, 16 GiB.
inline BuiltAllocator BuildForLoops(std::string_view policy,
                                    std::string_view config = "") {
  AllocatorSpec spec;
  EXPECT_TRUE(SetAllocatorOption(spec, "policy", policy).ok());
  EXPECT_TRUE(SetAllocatorOption(spec, "memory_limit", "16G").ok());
  if (!config.empty()) {
    EXPECT_TRUE(SetAllocatorOption(spec, "config", config).ok());
  }
  absl::StatusOr<BuiltAllocator> built = CreateAllocator(spec);
  EXPECT_TRUE(built.ok()) << built.status();
  return *std::move(built);
}

inline PlannedAllocator& AsPlanned(BuiltAllocator& built) {
  auto* planned = dynamic_cast<PlannedAllocator*>(built.allocator.get());
  EXPECT_NE(planned, nullptr);
  return *planned;
}

// One call: allocate `bytes` as block `id`, or free block `id`.
struct LoopCall {
  bool alloc = true;
  int id = 0;
  uint64_t bytes = 0;
};

// A training step over `layers` layers: forward keeps one activation per
// layer and frees a temporary; backward frees the activations in reverse and
// makes a gradient per layer, all freed at the end. Sizes are fixed by
// `seed` (the same seed makes the same iteration); ids start at `first_id`.
inline std::vector<LoopCall> TrainingStep(int layers, uint32_t seed,
                                          uint64_t scale, int first_id) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<uint64_t> size(scale / 4, scale);
  std::vector<LoopCall> calls;
  int id = first_id;
  std::vector<int> activations, gradients;
  for (int layer = 0; layer < layers; ++layer) {
    const int temporary = id++;
    calls.push_back({true, temporary, size(random)});
    activations.push_back(id);
    calls.push_back({true, id++, size(random)});
    calls.push_back({false, temporary, 0});
  }
  for (int layer = layers - 1; layer >= 0; --layer) {
    gradients.push_back(id);
    calls.push_back({true, id++, size(random) / 2});
    calls.push_back({false, activations[layer], 0});
  }
  for (int gradient : gradients) calls.push_back({false, gradient, 0});
  return calls;
}

// Runs calls, keeping every live block's range, and fails the test when a
// new block overlaps a live one or is not aligned.
class LoopDriver {
 public:
  explicit LoopDriver(Allocator& allocator) : allocator_(allocator) {}
  ~LoopDriver() { FreeAll(); }

  void Run(const std::vector<LoopCall>& calls) {
    for (const LoopCall& call : calls) {
      if (call.alloc) {
        Allocate(call.id, call.bytes);
      } else {
        Free(call.id);
      }
    }
  }

  void* Allocate(int id, uint64_t bytes) {
    void* ptr = allocator_.Allocate(bytes);
    EXPECT_NE(ptr, nullptr) << "block " << id << " of " << bytes << " bytes";
    if (ptr == nullptr) return nullptr;
    const uintptr_t begin = reinterpret_cast<uintptr_t>(ptr);
    EXPECT_EQ(begin % Allocator::kDefaultAlignment, 0u);
    auto next = ranges_.lower_bound(begin);
    if (next != ranges_.end()) {
      EXPECT_GE(next->first, begin + bytes) << "block " << id << " overlaps";
    }
    if (next != ranges_.begin()) {
      EXPECT_LE(std::prev(next)->second, begin)
          << "block " << id << " overlaps";
    }
    ranges_[begin] = begin + bytes;
    live_[id] = ptr;
    return ptr;
  }

  void Free(int id) {
    auto it = live_.find(id);
    if (it == live_.end()) return;  // its allocation failed
    ranges_.erase(reinterpret_cast<uintptr_t>(it->second));
    EXPECT_TRUE(allocator_.CheckedDeallocate(it->second).ok());
    live_.erase(it);
  }

  void FreeAll() {
    while (!live_.empty()) Free(live_.begin()->first);
  }

  size_t live_blocks() const { return live_.size(); }

 private:
  Allocator& allocator_;
  std::map<int, void*> live_;
  std::map<uintptr_t, uintptr_t> ranges_;  // live blocks: begin -> end
};

}  // namespace tensormem::testing

#endif  // TENSORMEM_TESTS_ALLOC_LOOP_WORKLOADS_H_
