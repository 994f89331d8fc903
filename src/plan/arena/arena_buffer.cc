#include "tensormem/plan/arena/arena_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_format.h"
#include "tensormem/core/checked_math.h"

namespace tensormem {
namespace {

void* HostAllocate(size_t bytes, size_t alignment) {
  // aligned_alloc wants a multiple of the alignment (and of sizeof(void*)).
  const size_t align = std::max(alignment, sizeof(void*));
  std::optional<uint64_t> rounded = CheckedRoundUp(bytes, align);
  if (!rounded) return nullptr;
  return std::aligned_alloc(align, *rounded);
}

// The reservation is rounded up to whole pages; munmap needs the same length.
size_t PageRounded(size_t bytes) {
  return RoundUp(bytes, static_cast<size_t>(4096));
}

void* Reserve(size_t bytes, size_t alignment) {
  if (alignment > 4096 || bytes > (size_t{1} << 56)) return nullptr;
  void* block = mmap(nullptr, PageRounded(bytes), PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return block == MAP_FAILED ? nullptr : block;
}

}  // namespace

ArenaBufferCallbacks HostArenaBufferCallbacks() {
  ArenaBufferCallbacks callbacks;
  callbacks.allocate = HostAllocate;
  callbacks.reallocate = [](void* old, size_t old_bytes, size_t new_bytes,
                            size_t alignment) -> void* {
    void* block = HostAllocate(new_bytes, alignment);
    if (block == nullptr) return nullptr;
    if (old != nullptr) {
      std::memcpy(block, old, std::min(old_bytes, new_bytes));
      std::free(old);
    }
    return block;
  };
  callbacks.free = [](void* block, size_t) { std::free(block); };
  return callbacks;
}

ArenaBufferCallbacks ReservedAddressSpaceCallbacks() {
  ArenaBufferCallbacks callbacks;
  callbacks.allocate = Reserve;
  callbacks.reallocate = [](void* old, size_t old_bytes, size_t new_bytes,
                            size_t alignment) -> void* {
    void* block = Reserve(new_bytes, alignment);
    if (block != nullptr && old != nullptr) munmap(old, PageRounded(old_bytes));
    return block;
  };
  callbacks.free = [](void* block, size_t bytes) {
    munmap(block, PageRounded(bytes));
  };
  return callbacks;
}

ArenaBuffer::ArenaBuffer(size_t alignment, ArenaBufferCallbacks callbacks)
    : alignment_(alignment), callbacks_(std::move(callbacks)) {}

ArenaBuffer::~ArenaBuffer() { Release(); }

absl::StatusOr<bool> ArenaBuffer::Resize(size_t bytes) {
  if (bytes <= size_) return false;
  if (!callbacks_.allocate || !callbacks_.reallocate || !callbacks_.free) {
    return absl::InvalidArgumentError(
        "the arena buffer callbacks must set allocate, reallocate and free");
  }
  void* block = data_ == nullptr
                    ? callbacks_.allocate(bytes, alignment_)
                    : callbacks_.reallocate(data_, size_, bytes, alignment_);
  if (block == nullptr) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot obtain an arena buffer of %d bytes (aligned to %d); the "
        "current buffer of %d bytes is kept",
        bytes, alignment_, size_));
  }
  if (reinterpret_cast<uintptr_t>(block) % alignment_ != 0) {
    // A callback broke its contract; refuse rather than hand out misaligned
    // tensors. The block is ours now, so give it back.
    callbacks_.free(block, bytes);
    data_ = nullptr;
    size_ = 0;
    return absl::InternalError(absl::StrFormat(
        "the arena buffer callback returned %p, not aligned to %d", block,
        alignment_));
  }
  const bool moved = block != data_;
  data_ = static_cast<char*>(block);
  size_ = bytes;
  return moved;
}

void ArenaBuffer::Release() {
  if (data_ == nullptr) return;  // (so `free` is set: Resize checked it)
  callbacks_.free(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace tensormem
