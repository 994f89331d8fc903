#include "tensormem/alloc/fault_injecting_sub_allocator.h"

#include <algorithm>
#include <utility>

namespace tensormem {

FaultInjectingSubAllocator::FaultInjectingSubAllocator(
    std::unique_ptr<SubAllocator> wrapped)
    : wrapped_(std::move(wrapped)) {}

void FaultInjectingSubAllocator::FailAllocCall(int64_t call_number) {
  std::lock_guard<std::mutex> lock(mutex_);
  failing_calls_.insert(call_number);
}

void FaultInjectingSubAllocator::SetFailAlways(bool fail_always) {
  std::lock_guard<std::mutex> lock(mutex_);
  fail_always_ = fail_always;
}

void FaultInjectingSubAllocator::SetShortfall(size_t shortfall) {
  std::lock_guard<std::mutex> lock(mutex_);
  shortfall_ = shortfall;
}

bool FaultInjectingSubAllocator::CountCallAndFail() {
  const int64_t call_number = ++alloc_calls_;
  if (!fail_always_ && !failing_calls_.contains(call_number)) return false;
  ++failed_allocs_;
  return true;
}

void* FaultInjectingSubAllocator::Alloc(size_t bytes, size_t alignment,
                                        size_t* bytes_received) {
  *bytes_received = 0;
  size_t shortfall;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (CountCallAndFail()) return nullptr;
    shortfall = shortfall_;
  }
  size_t real_bytes = 0;
  void* region = wrapped_->Alloc(bytes, alignment, &real_bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (region == nullptr) {
    ++failed_allocs_;
    return nullptr;
  }
  const size_t reported = bytes > shortfall ? bytes - shortfall : 0;
  regions_[region] = Region{reported, real_bytes};
  live_bytes_ += reported;
  *bytes_received = reported;
  return region;
}

void FaultInjectingSubAllocator::CountDecommitted(const void* ptr, size_t bytes,
                                                  bool decommitted) {
  // A range may span adjacent regions; regions are few in tests, so each
  // part's region is found by a scan.
  const char* at = static_cast<const char*>(ptr);
  const char* const end = at + bytes;
  while (at < end) {
    Region* holder = nullptr;
    const char* holder_end = nullptr;
    for (auto& [start, region] : regions_) {
      const char* begin = static_cast<const char*>(start);
      if (at >= begin && at < begin + region.reported_bytes) {
        holder = &region;
        holder_end = begin + region.reported_bytes;
      }
    }
    if (holder == nullptr) return;
    const size_t part = static_cast<size_t>(std::min(end, holder_end) - at);
    if (decommitted) {
      holder->decommitted_bytes += part;
      live_bytes_ -= part;
    } else {
      holder->decommitted_bytes -= part;
      live_bytes_ += part;
    }
    at += part;
  }
}

bool FaultInjectingSubAllocator::Decommit(void* ptr, size_t bytes) {
  if (!wrapped_->Decommit(ptr, bytes)) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  CountDecommitted(ptr, bytes, /*decommitted=*/true);
  return true;
}

bool FaultInjectingSubAllocator::Recommit(void* ptr, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (CountCallAndFail()) return false;
  }
  const bool recommitted = wrapped_->Recommit(ptr, bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!recommitted) {
    ++failed_allocs_;
    return false;
  }
  CountDecommitted(ptr, bytes, /*decommitted=*/false);
  return true;
}

void FaultInjectingSubAllocator::Free(void* ptr, size_t bytes) {
  size_t real_bytes;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++free_calls_;
    auto it = regions_.find(ptr);
    if (it == regions_.end() || it->second.reported_bytes != bytes) {
      ++bad_frees_;
      return;
    }
    real_bytes = it->second.real_bytes;
    live_bytes_ -= it->second.reported_bytes - it->second.decommitted_bytes;
    regions_.erase(it);
  }
  wrapped_->Free(ptr, real_bytes);
}

int64_t FaultInjectingSubAllocator::alloc_calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return alloc_calls_;
}

int64_t FaultInjectingSubAllocator::failed_allocs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_allocs_;
}

int64_t FaultInjectingSubAllocator::free_calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_calls_;
}

int64_t FaultInjectingSubAllocator::bad_frees() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bad_frees_;
}

size_t FaultInjectingSubAllocator::live_regions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return regions_.size();
}

uint64_t FaultInjectingSubAllocator::live_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_bytes_;
}

}  // namespace tensormem
