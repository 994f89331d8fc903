#include "tensormem/plan/arena/simple_memory_arena.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "tensormem/core/checked_math.h"

namespace tensormem {
namespace {

absl::Status OffsetOverflow(size_t offset, size_t size) {
  return absl::OutOfRangeError(absl::StrFormat(
      "arena offset %d + size %d overflows a 64-bit byte count", offset, size));
}

bool ByOffset(const ArenaAlloc& a, const ArenaAlloc& b) {
  return a.offset < b.offset;
}

}  // namespace

SimpleMemoryArena::SimpleMemoryArena(Options options)
    : options_(std::move(options)),
      buffer_(options_.arena_alignment, options_.callbacks) {}

absl::Status SimpleMemoryArena::CheckAlignment(size_t alignment) const {
  if (!IsPowerOfTwo(options_.arena_alignment)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "arena alignment %d is not a power of two", options_.arena_alignment));
  }
  if (!IsPowerOfTwo(alignment) || alignment > options_.arena_alignment) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor alignment %d must be a power of two no larger than the arena "
        "alignment %d",
        alignment, options_.arena_alignment));
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> SimpleMemoryArena::QueueOffset(size_t size,
                                                      size_t alignment) const {
  // Default: on top of the highest block.
  const size_t top =
      allocs_.empty() ? 0 : allocs_.back().offset + allocs_.back().size;
  std::optional<uint64_t> best = CheckedRoundUp(top, alignment);
  if (!best) return OffsetOverflow(top, alignment);
  size_t best_fit = std::numeric_limits<size_t>::max();
  size_t current = 0;  // end of the block below the gap being looked at
  for (const ArenaAlloc& alloc : allocs_) {
    std::optional<uint64_t> aligned = CheckedRoundUp(current, alignment);
    std::optional<uint64_t> end =
        aligned ? CheckedAdd(*aligned, size) : std::nullopt;
    if (end && *end <= alloc.offset && alloc.offset - current < best_fit) {
      best = *aligned;
      best_fit = alloc.offset - current;  // unaligned: the TFLite measure
    }
    current = alloc.offset + alloc.size;
  }
  return *best;
}

absl::StatusOr<size_t> SimpleMemoryArena::GreedyOffset(
    size_t size, size_t alignment, int32_t first_node,
    int32_t last_node) const {
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  size_t best = kNone;
  size_t best_fit = kNone;
  size_t current = 0;  // highest end among the blocks met so far
  for (const ArenaAlloc& alloc : allocs_) {
    if (alloc.last_node < first_node || alloc.first_node > last_node) continue;
    std::optional<uint64_t> aligned = CheckedRoundUp(current, alignment);
    if (!aligned) return OffsetOverflow(current, alignment);
    std::optional<uint64_t> end = CheckedAdd(*aligned, size);
    if (!end) return OffsetOverflow(*aligned, size);
    // Accepts by the aligned gap, records the unaligned one (TFLite's quirk).
    if (*end <= alloc.offset && alloc.offset - *aligned < best_fit) {
      best = *aligned;
      best_fit = alloc.offset - current;
    }
    current = std::max(current, alloc.offset + alloc.size);
    if (best_fit == 0) break;
  }
  if (best == kNone) {
    std::optional<uint64_t> aligned = CheckedRoundUp(current, alignment);
    if (!aligned) return OffsetOverflow(current, alignment);
    best = *aligned;
  }
  return best;
}

absl::StatusOr<ArenaAlloc> SimpleMemoryArena::Allocate(size_t size,
                                                       size_t alignment,
                                                       int32_t tensor,
                                                       int32_t first_node,
                                                       int32_t last_node) {
  if (absl::Status s = CheckAlignment(alignment); !s.ok()) return s;
  ArenaAlloc alloc{.offset = 0,
                   .size = size,
                   .tensor = tensor,
                   .first_node = first_node,
                   .last_node = last_node};
  if (size == 0) return alloc;
  absl::StatusOr<size_t> offset =
      options_.generation == ArenaGeneration::kQueue
          ? QueueOffset(size, alignment)
          : GreedyOffset(size, alignment, first_node, last_node);
  if (!offset.ok()) return offset.status();
  std::optional<uint64_t> end = CheckedAdd(*offset, size);
  if (!end) return OffsetOverflow(*offset, size);
  alloc.offset = *offset;
  high_water_mark_ = std::max<size_t>(high_water_mark_, *end);
  allocs_.insert(
      std::upper_bound(allocs_.begin(), allocs_.end(), alloc, ByOffset), alloc);
  return alloc;
}

absl::Status SimpleMemoryArena::Deallocate(const ArenaAlloc& alloc) {
  if (alloc.size == 0) return absl::OkStatus();
  auto it =
      std::find_if(allocs_.begin(), allocs_.end(), [&](const ArenaAlloc& a) {
        return a.offset == alloc.offset && a.tensor == alloc.tensor;
      });
  if (it == allocs_.end()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "deallocating a block that is not planned: offset %d, size %d, "
        "tensor %d",
        alloc.offset, alloc.size, alloc.tensor));
  }
  if (it->size != alloc.size) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "deallocating %d bytes at offset %d (tensor %d), but %d are planned "
        "there",
        alloc.size, alloc.offset, alloc.tensor, it->size));
  }
  allocs_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<size_t> SimpleMemoryArena::RequiredBufferSize() const {
  if (options_.generation == ArenaGeneration::kGreedy) return high_water_mark_;
  std::optional<uint64_t> padding = CheckedMul(options_.arena_alignment, 2);
  std::optional<uint64_t> required =
      padding ? CheckedAdd(high_water_mark_, *padding) : std::nullopt;
  if (!required)
    return OffsetOverflow(high_water_mark_, options_.arena_alignment);
  return *required;
}

absl::StatusOr<bool> SimpleMemoryArena::Commit() {
  if (absl::Status s = CheckAlignment(1); !s.ok()) return s;
  committed_ = false;
  absl::StatusOr<size_t> required = RequiredBufferSize();
  if (!required.ok()) return required.status();
  absl::StatusOr<bool> moved = buffer_.Resize(*required);
  if (!moved.ok()) return moved.status();
  committed_ = true;
  return *moved;
}

absl::StatusOr<char*> SimpleMemoryArena::Resolve(
    const ArenaAlloc& alloc) const {
  if (!committed_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "resolving offset %d (tensor %d) before the arena is committed",
        alloc.offset, alloc.tensor));
  }
  std::optional<uint64_t> end = CheckedAdd(alloc.offset, alloc.size);
  if (!end || *end > buffer_.size()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "block [%d, +%d) of tensor %d lies outside the %d-byte arena buffer",
        alloc.offset, alloc.size, alloc.tensor, buffer_.size()));
  }
  if (alloc.size == 0) return nullptr;
  return buffer_.data() + alloc.offset;
}

void SimpleMemoryArena::ClearPlan() {
  committed_ = false;
  high_water_mark_ = 0;
  allocs_.clear();
}

void SimpleMemoryArena::ReleaseBuffer() {
  committed_ = false;
  buffer_.Release();
}

void SimpleMemoryArena::PurgeActiveAllocs(int32_t node) {
  std::erase_if(allocs_,
                [&](const ArenaAlloc& a) { return a.last_node < node; });
}

void SimpleMemoryArena::PurgeAfter(int32_t node) {
  std::erase_if(allocs_,
                [&](const ArenaAlloc& a) { return a.first_node > node; });
}

void SimpleMemoryArena::RestoreAllocsAt(const std::vector<ArenaAlloc>& allocs,
                                        int32_t node) {
  allocs_.clear();
  for (const ArenaAlloc& a : allocs) {
    if (a.size == 0 || a.first_node > node) continue;
    const bool live = options_.generation == ArenaGeneration::kGreedy
                          ? a.last_node >= node
                          : a.last_node > node;
    if (live) allocs_.push_back(a);
  }
  std::stable_sort(allocs_.begin(), allocs_.end(), ByOffset);
}

}  // namespace tensormem
