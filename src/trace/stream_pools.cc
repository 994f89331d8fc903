#include "tensormem/trace/stream_pools.h"

#include <algorithm>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "tensormem/core/status_macros.h"

namespace tensormem {
namespace {

struct LiveBlock {
  int32_t stream;
  void* per_stream;  // nullptr when that allocation failed
  void* shared;
};

size_t AlignmentOf(const TraceEvent& event) {
  return event.alignment == 0 ? Allocator::kDefaultAlignment : event.alignment;
}

uint64_t PoolBytes(const Allocator& allocator) {
  const std::optional<AllocatorStats> stats = allocator.GetStats();
  return stats ? stats->pool_bytes : 0;
}

class Simulation {
 public:
  explicit Simulation(
      const std::function<absl::StatusOr<ReplayTarget>()>& make_target)
      : make_target_(make_target) {}

  absl::Status Run(const Trace& trace) {
    TM_ASSIGN_OR_RETURN(shared_, make_target_());
    for (size_t index = 0; index < trace.events.size(); ++index) {
      const TraceEvent& event = trace.events[index];
      if (event.failed) continue;
      if (event.op == TraceOp::kAlloc) {
        TM_RETURN_IF_ERROR(Alloc(event));
      } else {
        TM_RETURN_IF_ERROR(Free(event, index));
      }
    }
    return absl::OkStatus();
  }

  StreamPoolsResult Finish() {
    for (auto& [id, block] : live_) {
      if (block.per_stream)
        pools_[block.stream].allocator->Deallocate(block.per_stream);
      if (block.shared) shared_.allocator->Deallocate(block.shared);
    }
    live_.clear();
    for (const auto& [stream, pool] : pools_)
      result_.streams.push_back(pool.stats);
    return result_;
  }

 private:
  struct Pool {
    ReplayTarget target;
    Allocator* allocator = nullptr;
    StreamPoolStats stats;
  };

  absl::StatusOr<Pool*> PoolFor(int32_t stream) {
    auto found = pools_.find(stream);
    if (found != pools_.end()) return &found->second;
    TM_ASSIGN_OR_RETURN(ReplayTarget target, make_target_());
    Pool& pool = pools_[stream];
    pool.target = std::move(target);
    pool.allocator = pool.target.allocator.get();
    pool.stats.stream = stream;
    return &pool;
  }

  // Free bytes in every pool but `stream`'s, and the largest free block.
  std::pair<uint64_t, uint64_t> FreeElsewhere(int32_t stream) const {
    uint64_t free_bytes = 0, largest = 0;
    for (const auto& [other, pool] : pools_) {
      if (other == stream) continue;
      const std::optional<AllocatorStats> stats = pool.allocator->GetStats();
      if (!stats) continue;
      free_bytes +=
          stats->pool_bytes - std::min(stats->pool_bytes, stats->bytes_in_use);
      largest = std::max(largest, stats->largest_free_block_bytes);
    }
    return {free_bytes, largest};
  }

  absl::Status Alloc(const TraceEvent& event) {
    TM_ASSIGN_OR_RETURN(Pool * pool, PoolFor(event.stream));
    const uint64_t before = PoolBytes(*pool->allocator);
    LiveBlock block{event.stream, nullptr, nullptr};
    block.per_stream =
        pool->allocator->Allocate(event.bytes, AlignmentOf(event));
    const uint64_t after = PoolBytes(*pool->allocator);
    if (block.per_stream == nullptr) ++result_.failed_allocs_per_stream;
    ++pool->stats.allocs;
    pool->stats.peak_pool_bytes = std::max(pool->stats.peak_pool_bytes, after);
    total_pool_ += after - before;
    result_.per_stream_peak_pool_bytes =
        std::max(result_.per_stream_peak_pool_bytes, total_pool_);
    if (after > before || block.per_stream == nullptr) {
      const auto [stranded, largest] = FreeElsewhere(event.stream);
      result_.peak_stranded_bytes =
          std::max(result_.peak_stranded_bytes, stranded);
      if (largest >= event.bytes) ++result_.avoidable_growths;
    }
    block.shared = shared_.allocator->Allocate(event.bytes, AlignmentOf(event));
    if (block.shared == nullptr) ++result_.failed_allocs_shared;
    result_.shared_peak_pool_bytes =
        std::max(result_.shared_peak_pool_bytes, PoolBytes(*shared_.allocator));
    live_[event.id] = block;
    return absl::OkStatus();
  }

  absl::Status Free(const TraceEvent& event, size_t index) {
    auto found = live_.find(event.id);
    if (found == live_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "event ", index, ": free of id ", event.id, ", which is not live"));
    }
    const LiveBlock block = found->second;
    live_.erase(found);
    Pool& pool = pools_.at(block.stream);
    if (block.per_stream != nullptr) {
      const uint64_t before = PoolBytes(*pool.allocator);
      pool.allocator->Deallocate(block.per_stream);
      total_pool_ -= before - PoolBytes(*pool.allocator);  // GC may shrink
    }
    if (block.shared != nullptr) shared_.allocator->Deallocate(block.shared);
    return absl::OkStatus();
  }

  const std::function<absl::StatusOr<ReplayTarget>()>& make_target_;
  ReplayTarget shared_;
  std::map<int32_t, Pool> pools_;
  absl::flat_hash_map<uint64_t, LiveBlock> live_;
  uint64_t total_pool_ = 0;
  StreamPoolsResult result_;
};

}  // namespace

absl::StatusOr<StreamPoolsResult> SimulateStreamPools(
    const Trace& trace,
    const std::function<absl::StatusOr<ReplayTarget>()>& make_target) {
  Simulation simulation(make_target);
  TM_RETURN_IF_ERROR(simulation.Run(trace));
  return simulation.Finish();
}

nlohmann::json StreamPoolsToJson(const StreamPoolsResult& result) {
  nlohmann::json streams = nlohmann::json::array();
  for (const StreamPoolStats& stream : result.streams) {
    streams.push_back({{"stream", stream.stream},
                       {"allocs", stream.allocs},
                       {"peak_pool_bytes", stream.peak_pool_bytes}});
  }
  return {{"streams", streams},
          {"shared_peak_pool_bytes", result.shared_peak_pool_bytes},
          {"per_stream_peak_pool_bytes", result.per_stream_peak_pool_bytes},
          {"peak_stranded_bytes", result.peak_stranded_bytes},
          {"avoidable_growths", result.avoidable_growths},
          {"failed_allocs_per_stream", result.failed_allocs_per_stream},
          {"failed_allocs_shared", result.failed_allocs_shared}};
}

}  // namespace tensormem
