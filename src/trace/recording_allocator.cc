#include "tensormem/trace/recording_allocator.h"

#include <cstdint>

#include "tensormem/core/checked_math.h"

namespace tensormem {

TraceRecordingAllocator::TraceRecordingAllocator(Allocator& wrapped,
                                                 TraceWriter& writer)
    : wrapped_(wrapped),
      start_(std::chrono::steady_clock::now()),
      writer_(writer) {}

uint64_t TraceRecordingAllocator::events_recorded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_recorded_;
}

int64_t TraceRecordingAllocator::NanosSinceStart() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now() - start_)
      .count();
}

int32_t TraceRecordingAllocator::StreamOfThisThread() {
  auto [it, inserted] = streams_.try_emplace(
      std::this_thread::get_id(), static_cast<int32_t>(streams_.size()));
  return it->second;
}

void* TraceRecordingAllocator::DoAllocate(size_t bytes, size_t alignment,
                                          int32_t stream) {
  // The wrapped allocator runs outside the lock so that recording does not
  // serialize a concurrent allocator; the event is written once the block
  // exists, so no free of it can be written before its allocation.
  void* ptr = wrapped_.Allocate(bytes, alignment, stream);
  TraceEvent event = TraceEvent::Alloc(0, bytes);
  // An invalid alignment (the wrapped allocator refuses it) is left out, so
  // the trace stays readable; the request is still recorded as failed.
  if (alignment != kDefaultAlignment && IsPowerOfTwo(alignment) &&
      alignment <= (uint64_t{1} << 31)) {
    event.alignment = static_cast<uint32_t>(alignment);
  }

  event.failed = ptr == nullptr;
  event.time_ns = NanosSinceStart();
  std::lock_guard<std::mutex> lock(mutex_);
  event.id = next_id_++;
  event.stream = StreamOfThisThread();
  if (ptr != nullptr) live_ids_[ptr] = event.id;
  writer_.Write(event);
  ++events_recorded_;
  return ptr;
}

absl::Status TraceRecordingAllocator::DoDeallocate(void* ptr) {
  {
    // The free is written before the block is released: once released, its
    // address may be handed to another thread, whose allocation must come
    // after this free in the trace.
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_ids_.find(ptr);
    if (it != live_ids_.end()) {
      TraceEvent event = TraceEvent::Free(it->second);
      event.time_ns = NanosSinceStart();
      event.stream = StreamOfThisThread();
      live_ids_.erase(it);
      writer_.Write(event);
      ++events_recorded_;
    }
  }
  // Pointers the recorder never handed out go to the wrapped allocator
  // unrecorded, which reports them as misuse (or frees a block allocated
  // before recording began).
  return wrapped_.CheckedDeallocate(ptr);
}

}  // namespace tensormem
