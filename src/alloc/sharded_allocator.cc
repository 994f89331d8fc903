#include "tensormem/alloc/sharded_allocator.h"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "alloc/thread_numbers.h"

namespace tensormem {

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
  const size_t first = internal::ThreadNumber() % shards_.size();
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
    total.AddPool(stats);
    if (shared_limit_ == 0) *total.bytes_limit += stats.bytes_limit.value_or(0);
  }
  return total;
}

bool ShardedAllocator::ClearStats() {
  for (const std::unique_ptr<BfcAllocator>& shard : shards_)
    shard->ClearStats();
  return true;
}

}  // namespace tensormem
