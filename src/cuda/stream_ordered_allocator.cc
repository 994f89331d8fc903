#include "tensormem/cuda/stream_ordered_allocator.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "tensormem/core/status_macros.h"

namespace tensormem {

StreamOrderedAllocator::StreamOrderedAllocator(
    std::unique_ptr<Allocator> allocator, BfcAllocator* bfc, CudaDriver* driver,
    int device)
    : allocator_(std::move(allocator)),
      bfc_(bfc),
      driver_(driver),
      device_(device) {}

StreamOrderedAllocator::~StreamOrderedAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.clear();  // returns every shared event to spare_events_
  const CudaDeviceScope scope(*driver_, device_);
  if (!scope.status().ok()) return;
  for (CUevent event : spare_events_) driver_->api().cuEventDestroy(event);
}

int64_t StreamOrderedAllocator::events_recorded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_recorded_;
}

int64_t StreamOrderedAllocator::cross_stream_waits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cross_stream_waits_;
}

absl::Status StreamOrderedAllocator::last_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_error_;
}

absl::StatusOr<CUevent> StreamOrderedAllocator::TakeEvent() {
  if (!spare_events_.empty()) {
    CUevent event = spare_events_.back();
    spare_events_.pop_back();
    return event;
  }
  CUevent event = nullptr;
  TM_RETURN_IF_ERROR(driver_->Check(
      driver_->api().cuEventCreate(&event, CU_EVENT_DISABLE_TIMING),
      "cuEventCreate"));
  return event;
}

// The event goes back to the spares when no pending range refers to it; a
// stream that waited on it keeps the state it had then, so reuse is safe.
// Ranges are only dropped under mutex_, so the deleter runs under it too.
std::shared_ptr<CUevent> StreamOrderedAllocator::Share(CUevent event) {
  return std::shared_ptr<CUevent>(new CUevent(event), [this](CUevent* shared) {
    spare_events_.push_back(*shared);
    delete shared;
  });
}

void StreamOrderedAllocator::Forget(uintptr_t start, uintptr_t end) {
  auto it = pending_.lower_bound(start);
  if (it != pending_.begin() && std::prev(it)->second.end > start) --it;
  while (it != pending_.end() && it->first < end) {
    const uintptr_t piece_start = it->first;
    PendingFree piece = it->second;
    it = pending_.erase(it);
    if (piece_start < start) {
      pending_[piece_start] = PendingFree{start, piece.stream, piece.event};
    }
    if (piece.end > end) {
      it = pending_
               .emplace(end, PendingFree{piece.end, piece.stream, piece.event})
               .first;
      ++it;
    }
  }
}

void* StreamOrderedAllocator::Allocate(size_t bytes, CUstream stream) {
  void* block = allocator_->Allocate(bytes, /*alignment=*/256);
  if (block == nullptr) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(block);
  const uintptr_t end =
      start + allocator_->AllocatedSize(block).value_or(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  std::set<CUevent> waited;
  auto it = pending_.lower_bound(start);
  if (it != pending_.begin() && std::prev(it)->second.end > start) --it;
  for (; it != pending_.end() && it->first < end; ++it) {
    const PendingFree& piece = it->second;
    if (piece.stream == stream || !waited.insert(*piece.event).second) continue;
    const CudaDeviceScope scope(*driver_, device_);
    absl::Status status = scope.status();
    if (status.ok()) {
      status = driver_->Check(
          driver_->api().cuStreamWaitEvent(stream, *piece.event, 0),
          "cuStreamWaitEvent");
    }
    if (!status.ok()) {
      last_error_ = status;
      // Never hand out memory another stream uses.
      allocator_->Deallocate(block);
      return nullptr;
    }
    ++cross_stream_waits_;
  }
  return block;
}

absl::Status StreamOrderedAllocator::Free(void* ptr, CUstream stream) {
  const std::optional<size_t> size = allocator_->AllocatedSize(ptr);
  if (!size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "free of ", reinterpret_cast<uintptr_t>(ptr), " on device ", device_,
        ", which is not a live block of this allocator"));
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const CudaDeviceScope scope(*driver_, device_);
    absl::Status status = scope.status();
    absl::StatusOr<CUevent> event =
        status.ok() ? TakeEvent() : absl::StatusOr<CUevent>(status);
    if (event.ok()) {
      status = driver_->Check(driver_->api().cuEventRecord(*event, stream),
                              "cuEventRecord");
      if (!status.ok()) spare_events_.push_back(*event);
    } else {
      status = event.status();
    }
    if (!status.ok()) {
      // Without an event the only safe reuse is after the stream drains.
      last_error_ = status;
      driver_->api().cuStreamSynchronize(stream);
    } else {
      ++events_recorded_;
      Forget(start, start + *size);
      pending_[start] = PendingFree{start + *size, stream, Share(*event)};
    }
  }
  allocator_->Deallocate(ptr);
  return absl::OkStatus();
}

}  // namespace tensormem
