#include "tensormem/alloc/sharded_allocator.h"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace tensormem {
namespace {

// Numbers for the threads that allocate from sharded allocators. A thread
// takes the lowest number no live thread holds when it first allocates, and
// gives it back when it exits, so N threads alive at once on N shards each
// get a shard of their own however many threads came and went before. (A
// counter handed a long-lived thread and three new ones the same shard
// whenever three threads had come and gone in between: two threads then
// took turns on one lock.)
class ThreadNumbers {
 public:
  uint32_t Take() {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto free = std::find(taken_.begin(), taken_.end(), false);
    const auto number = static_cast<uint32_t>(free - taken_.begin());
    if (free == taken_.end()) {
      taken_.push_back(true);
    } else {
      *free = true;
    }
    return number;
  }
  void Give(uint32_t number) {
    std::lock_guard<std::mutex> lock(mutex_);
    taken_[number] = false;
  }

 private:
  std::mutex mutex_;
  std::vector<bool> taken_;  // guarded by mutex_
};

ThreadNumbers& Numbers() {
  static auto* const numbers = new ThreadNumbers;
  return *numbers;
}

// Held by each thread from its first allocation to its exit.
struct HeldThreadNumber {
  HeldThreadNumber() : value(Numbers().Take()) {}
  ~HeldThreadNumber() { Numbers().Give(value); }
  HeldThreadNumber(const HeldThreadNumber&) = delete;
  HeldThreadNumber& operator=(const HeldThreadNumber&) = delete;
  const uint32_t value;
};

uint32_t ThreadNumber() {
  thread_local const HeldThreadNumber number;
  return number.value;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShardedAllocator>> ShardedAllocator::Create(
    std::vector<std::unique_ptr<BfcAllocator>> shards, uint64_t shared_limit) {
  if (shards.empty())
    return absl::InvalidArgumentError("a sharded allocator needs shards");
  for (const std::unique_ptr<BfcAllocator>& shard : shards) {
    if (shard->upstream().BaseAddress() == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shards need a sub-allocator with a fixed address range (simulated, "
          "vmm); ",
          shard->upstream().Name(), " has none"));
    }
  }
  return std::unique_ptr<ShardedAllocator>(
      new ShardedAllocator(std::move(shards), shared_limit));
}

ShardedAllocator::ShardedAllocator(
    std::vector<std::unique_ptr<BfcAllocator>> shards, uint64_t shared_limit)
    : shards_(std::move(shards)), shared_limit_(shared_limit) {
  std::sort(shards_.begin(), shards_.end(), [](const auto& a, const auto& b) {
    return a->upstream().BaseAddress() < b->upstream().BaseAddress();
  });
  for (const std::unique_ptr<BfcAllocator>& shard : shards_) {
    bases_.push_back(
        reinterpret_cast<uintptr_t>(shard->upstream().BaseAddress()));
  }
}

std::string ShardedAllocator::Name() const {
  return absl::StrCat(shards_.front()->Name(), " x", shards_.size());
}

void* ShardedAllocator::DoAllocate(size_t bytes, size_t alignment,
                                   int32_t stream) {
  if (void* ptr = TryEveryShard(bytes, alignment, stream)) return ptr;
  // Free regions held by shards that do not need them now may be what the
  // shared limit lacks.
  bool released = false;
  for (const std::unique_ptr<BfcAllocator>& shard : shards_)
    released |= shard->ReleaseFreeRegions();
  return released ? TryEveryShard(bytes, alignment, stream) : nullptr;
}

void* ShardedAllocator::TryEveryShard(size_t bytes, size_t alignment,
                                      int32_t stream) {
  AllocationAttributes attributes;
  attributes.retry_on_failure = false;
  attributes.stream = stream;
  const size_t first = ThreadNumber() % shards_.size();
  for (size_t i = 0; i < shards_.size(); ++i) {
    BfcAllocator& shard = *shards_[(first + i) % shards_.size()];
    if (void* ptr = shard.AllocateRaw(alignment, bytes, attributes)) return ptr;
  }
  return nullptr;
}

const BfcAllocator& ShardedAllocator::Owner(const void* ptr) const {
  const auto above = std::upper_bound(bases_.begin(), bases_.end(),
                                      reinterpret_cast<uintptr_t>(ptr));
  return *shards_[above == bases_.begin() ? 0 : above - bases_.begin() - 1];
}

absl::Status ShardedAllocator::DoDeallocate(void* ptr) {
  return Owner(ptr).CheckedDeallocate(ptr);
}

std::optional<size_t> ShardedAllocator::RequestedSize(const void* ptr) const {
  return Owner(ptr).RequestedSize(ptr);
}

std::optional<size_t> ShardedAllocator::AllocatedSize(const void* ptr) const {
  return Owner(ptr).AllocatedSize(ptr);
}

std::optional<AllocatorStats> ShardedAllocator::GetStats() const {
  AllocatorStats total;
  total.bytes_limit = shared_limit_;
  for (const std::unique_ptr<BfcAllocator>& shard : shards_) {
    const AllocatorStats stats = *shard->GetStats();
    total.num_allocs += stats.num_allocs;
    total.bytes_in_use += stats.bytes_in_use;
    total.peak_bytes_in_use += stats.peak_bytes_in_use;
    total.largest_alloc_size =
        std::max(total.largest_alloc_size, stats.largest_alloc_size);
    if (shared_limit_ == 0) *total.bytes_limit += stats.bytes_limit.value_or(0);
    total.pool_bytes += stats.pool_bytes;
    total.peak_pool_bytes += stats.peak_pool_bytes;
    total.largest_free_block_bytes = std::max(total.largest_free_block_bytes,
                                              stats.largest_free_block_bytes);
    total.bytes_requested += stats.bytes_requested;
    total.inactive_split_bytes += stats.inactive_split_bytes;
    total.num_regions += stats.num_regions;
    total.num_ooms += stats.num_ooms;
    total.num_alloc_retries += stats.num_alloc_retries;
  }
  return total;
}

bool ShardedAllocator::ClearStats() {
  for (const std::unique_ptr<BfcAllocator>& shard : shards_)
    shard->ClearStats();
  return true;
}

}  // namespace tensormem
