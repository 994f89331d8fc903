#include "tensormem/alloc/allocator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_format.h"
#include "tensormem/core/units.h"

namespace tensormem {

void Allocator::DeallocateChecked(void* ptr) {
  const absl::Status status = CheckedDeallocate(ptr);
  if (!status.ok()) ReportMisuse(status);
}

void Allocator::ReportMisuse(const absl::Status& status) {
  switch (misuse_policy_) {
    case MisusePolicy::kCallback:
      if (misuse_callback_) {
        misuse_callback_(status);
        return;
      }
      [[fallthrough]];
    case MisusePolicy::kLogAndIgnore:
      std::fprintf(stderr, "tensormem: %s: %s\n", Name().c_str(),
                   status.ToString().c_str());
      return;
    case MisusePolicy::kLogAndAbort:
      std::fprintf(stderr,
                   "tensormem: %s: %s (aborting; see SetMisusePolicy)\n",
                   Name().c_str(), status.ToString().c_str());
      std::abort();
  }
}

void Allocator::SetMisusePolicy(
    MisusePolicy policy, std::function<void(const absl::Status&)> callback) {
  misuse_policy_ = policy;
  misuse_callback_ = std::move(callback);
}

void AllocatorStats::AddPool(const AllocatorStats& pool) {
  num_allocs += pool.num_allocs;
  bytes_in_use += pool.bytes_in_use;
  peak_bytes_in_use += pool.peak_bytes_in_use;
  largest_alloc_size = std::max(largest_alloc_size, pool.largest_alloc_size);
  pool_bytes += pool.pool_bytes;
  peak_pool_bytes += pool.peak_pool_bytes;
  largest_free_block_bytes =
      std::max(largest_free_block_bytes, pool.largest_free_block_bytes);
  bytes_requested += pool.bytes_requested;
  inactive_split_bytes += pool.inactive_split_bytes;
  num_regions += pool.num_regions;
  num_ooms += pool.num_ooms;
  num_alloc_retries += pool.num_alloc_retries;
}

std::string AllocatorStats::DebugString() const {
  return absl::StrFormat(
      "Limit:            %s\nInUse:            %s\nMaxInUse:         %s\n"
      "NumAllocs:        %d\nMaxAllocSize:     %s\nPool:             %s\n"
      "PeakPool:         %s\nLargestFreeBlock: %s\n",
      bytes_limit ? HumanBytes(*bytes_limit) : std::string("none"),
      HumanBytes(bytes_in_use), HumanBytes(peak_bytes_in_use), num_allocs,
      HumanBytes(largest_alloc_size), HumanBytes(pool_bytes),
      HumanBytes(peak_pool_bytes), HumanBytes(largest_free_block_bytes));
}

}  // namespace tensormem
