// ArenaBuffer: the one real, aligned block of memory behind an arena.
//
// The arena plans offsets; this buffer turns them into pointers. It only ever
// grows (a plan never shrinks it; Release frees it) and reports whether growing
// moved its base, because every pointer resolved into it must then be redone.
// Where the memory comes from is pluggable: ArenaBufferCallbacks allocate,
// reallocate (keeping the contents) and free it. The defaults use aligned host
// memory; ReservedAddressSpaceCallbacks hands out address space only, for
// tools that want a plan's pointers without committing its memory.
//
//   ArenaBuffer buffer(/*alignment=*/64, HostArenaBufferCallbacks());
//   absl::StatusOr<bool> moved = buffer.Resize(4096);  // base is 64-aligned
//   char* p = buffer.data() + 128;
#ifndef TENSORMEM_PLAN_ARENA_ARENA_BUFFER_H_
#define TENSORMEM_PLAN_ARENA_ARENA_BUFFER_H_

#include <cstddef>
#include <functional>

#include "absl/status/statusor.h"

namespace tensormem {

struct ArenaBufferCallbacks {
  // Returns `bytes` (> 0) bytes aligned to `alignment`, or nullptr.
  std::function<void*(size_t bytes, size_t alignment)> allocate;
  // Returns a block of `new_bytes` aligned to `alignment` holding the first
  // min(old, new) bytes of `old` (which it frees), or nullptr leaving `old`
  // untouched.
  std::function<void*(void* old, size_t old_bytes, size_t new_bytes,
                      size_t alignment)>
      reallocate;
  std::function<void(void* block, size_t bytes)> free;
};

// Aligned host memory (aligned_alloc / memcpy / free).
ArenaBufferCallbacks HostArenaBufferCallbacks();

// Inaccessible, never-committed address space (mmap PROT_NONE): pointers are
// real and distinct, but must not be dereferenced. Contents are not kept.
ArenaBufferCallbacks ReservedAddressSpaceCallbacks();

class ArenaBuffer {
 public:
  // `alignment` must be a power of two (the arena checks it).
  ArenaBuffer(size_t alignment, ArenaBufferCallbacks callbacks);
  ~ArenaBuffer();
  ArenaBuffer(const ArenaBuffer&) = delete;
  ArenaBuffer& operator=(const ArenaBuffer&) = delete;

  // Grows the buffer to at least `bytes`, keeping its contents. Returns true
  // iff the base address changed. A no-op (false) when already large enough.
  // On failure (ResourceExhausted) the old buffer is kept.
  absl::StatusOr<bool> Resize(size_t bytes);

  // Frees the memory; size() becomes 0 and data() nullptr.
  void Release();

  char* data() const { return data_; }
  size_t size() const { return size_; }
  size_t alignment() const { return alignment_; }

 private:
  size_t alignment_;
  ArenaBufferCallbacks callbacks_;
  char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_ARENA_ARENA_BUFFER_H_
