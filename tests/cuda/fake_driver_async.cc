// The fake CUDA driver: streams, events and stream-ordered memory pools.
//
// A pool keeps what its allocations free as a reserve (counted against the
// device) and gives the part above its release threshold back at the next
// synchronisation, as the real driver does; cuMemPoolTrimTo shrinks it now.
#include <algorithm>
#include <string>

#include "cuda/fake_driver_state.h"

namespace fake_cuda {
namespace {

uint64_t Id(const void* handle) { return reinterpret_cast<uintptr_t>(handle); }

template <typename Handle>
Handle FromId(uint64_t id) {
  return reinterpret_cast<Handle>(static_cast<uintptr_t>(id));
}

// The null stream always exists; others must have been created.
bool ValidStream(const State& state, CUstream stream) {
  return stream == nullptr || state.streams.count(Id(stream)) > 0;
}

uint64_t RoundUp(uint64_t bytes) {
  return (bytes + kGranularity - 1) / kGranularity * kGranularity;
}

void ShrinkPool(State& state, Pool& pool, uint64_t keep) {
  const uint64_t target = std::max(pool.used, RoundUp(keep));
  if (pool.reserved <= target) return;
  state.devices[pool.device].used -= pool.reserved - target;
  pool.reserved = target;
}

}  // namespace

void TrimPoolsAtSync(State& state) {
  for (auto& [id, pool] : state.pools) {
    ShrinkPool(state, pool, pool.release_threshold);
  }
}

}  // namespace fake_cuda

using fake_cuda::FromId;
using fake_cuda::Id;

extern "C" {

CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int /*flags*/) {
  FAKE_CUDA_ENTER("");
  if (CUresult error = fake_cuda::RequireContext(state))
    FAKE_CUDA_RETURN(error);
  const uint64_t id = state.next_id++;
  state.streams[id] = true;
  *stream = FromId<CUstream>(id);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  FAKE_CUDA_ENTER("stream=" + std::to_string(Id(stream)));
  if (state.streams.erase(Id(stream)) == 0) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_HANDLE);
  }
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  FAKE_CUDA_ENTER("stream=" + std::to_string(Id(stream)));
  if (!fake_cuda::ValidStream(state, stream)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_HANDLE);
  }
  fake_cuda::CompleteWork(state, Id(stream), /*all=*/false);
  fake_cuda::TrimPoolsAtSync(state);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned int /*flags*/) {
  FAKE_CUDA_ENTER("");
  if (CUresult error = fake_cuda::RequireContext(state))
    FAKE_CUDA_RETURN(error);
  const uint64_t id = state.next_id++;
  state.events[id] = fake_cuda::Event{};
  *event = FromId<CUevent>(id);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuEventDestroy(CUevent event) {
  FAKE_CUDA_ENTER("event=" + std::to_string(Id(event)));
  if (state.events.erase(Id(event)) == 0) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_HANDLE);
  }
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  FAKE_CUDA_ENTER("event=" + std::to_string(Id(event)) +
                  " stream=" + std::to_string(Id(stream)));
  auto found = state.events.find(Id(event));
  if (found == state.events.end() || !fake_cuda::ValidStream(state, stream)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_HANDLE);
  }
  // Complete once the stream's work queued so far is (fake_cuda_launch).
  fake_cuda::Event& recorded = found->second;
  recorded = fake_cuda::Event{true, Id(stream), 0};
  for (const fake_cuda::Work& work : state.pending) {
    if (work.stream == recorded.stream) {
      recorded.seq = std::max(recorded.seq, work.seq);
    }
  }
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuEventQuery(CUevent event) {
  FAKE_CUDA_ENTER("event=" + std::to_string(Id(event)));
  auto found = state.events.find(Id(event));
  if (found == state.events.end()) FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_HANDLE);
  for (const fake_cuda::Work& work : state.pending) {
    if (work.stream == found->second.stream && work.seq <= found->second.seq) {
      FAKE_CUDA_RETURN(CUDA_ERROR_NOT_READY);
    }
  }
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream stream, CUevent event,
                                   unsigned int flags) {
  FAKE_CUDA_ENTER("stream=" + std::to_string(Id(stream)) +
                  " event=" + std::to_string(Id(event)));
  auto found = state.events.find(Id(event));
  if (found == state.events.end() || !fake_cuda::ValidStream(state, stream)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_HANDLE);
  }
  if (flags != 0) FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  const fake_cuda::Event& waited = found->second;
  uint64_t& ordered = state.waits[{Id(stream), waited.stream}];
  ordered = std::max(ordered, waited.seq);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool,
                                 const CUmemPoolProps* props) {
  FAKE_CUDA_ENTER("");
  if (CUresult error = fake_cuda::RequireContext(state))
    FAKE_CUDA_RETURN(error);
  if (props == nullptr || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  if (!fake_cuda::ValidDevice(state, props->location.id)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_DEVICE);
  }
  const uint64_t id = state.next_id++;
  state.pools[id] = fake_cuda::Pool{props->location.id, 0, 0, 0};
  *pool = FromId<CUmemoryPool>(id);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
  FAKE_CUDA_ENTER("pool=" + std::to_string(Id(pool)));
  auto found = state.pools.find(Id(pool));
  if (found == state.pools.end()) FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  // Live allocations keep their memory; the reserve goes back.
  fake_cuda::ShrinkPool(state, found->second, 0);
  if (found->second.used > 0) FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  state.pools.erase(found);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool,
                                       CUmemPool_attribute attribute,
                                       void* value) {
  FAKE_CUDA_ENTER("attribute=" + std::to_string(attribute));
  auto found = state.pools.find(Id(pool));
  if (found == state.pools.end() || value == nullptr) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  if (attribute != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) {
    FAKE_CUDA_RETURN(CUDA_ERROR_NOT_SUPPORTED);
  }
  found->second.release_threshold = *static_cast<cuuint64_t*>(value);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool,
                                       CUmemPool_attribute attribute,
                                       void* value) {
  FAKE_CUDA_ENTER("attribute=" + std::to_string(attribute));
  auto found = state.pools.find(Id(pool));
  if (found == state.pools.end() || value == nullptr) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  cuuint64_t& out = *static_cast<cuuint64_t*>(value);
  switch (attribute) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      out = found->second.release_threshold;
      break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      out = found->second.reserved;
      break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      out = found->second.used;
      break;
    default:
      FAKE_CUDA_RETURN(CUDA_ERROR_NOT_SUPPORTED);
  }
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  FAKE_CUDA_ENTER("keep=" + std::to_string(keep));
  auto found = state.pools.find(Id(pool));
  if (found == state.pools.end()) FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  fake_cuda::ShrinkPool(state, found->second, keep);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr* ptr, size_t bytes,
                                         CUmemoryPool pool, CUstream stream) {
  FAKE_CUDA_ENTER("size=" + std::to_string(bytes) +
                  " stream=" + std::to_string(Id(stream)));
  if (CUresult error = fake_cuda::RequireContext(state))
    FAKE_CUDA_RETURN(error);
  auto found = state.pools.find(Id(pool));
  if (found == state.pools.end() || bytes == 0 || ptr == nullptr) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  if (!fake_cuda::ValidStream(state, stream)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_HANDLE);
  }
  fake_cuda::Pool& target = found->second;
  const uint64_t needed = target.used + bytes;
  if (needed > target.reserved) {
    const uint64_t growth = fake_cuda::RoundUp(needed - target.reserved);
    if (!fake_cuda::ChargeDevice(state, target.device, growth)) {
      FAKE_CUDA_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    }
    target.reserved += growth;
  }
  void* memory = fake_cuda::MapHost(bytes);
  if (memory == nullptr) FAKE_CUDA_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
  target.used += bytes;
  state.blocks[reinterpret_cast<uintptr_t>(memory)] = fake_cuda::Block{
      bytes, bytes, target.device, fake_cuda::BlockKind::kPool, Id(pool)};
  *ptr = reinterpret_cast<CUdeviceptr>(memory);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr ptr, CUstream stream) {
  FAKE_CUDA_ENTER("stream=" + std::to_string(Id(stream)));
  auto found = state.blocks.find(ptr);
  if (found == state.blocks.end() ||
      found->second.kind != fake_cuda::BlockKind::kPool) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  if (!fake_cuda::ValidStream(state, stream)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_HANDLE);
  }
  fake_cuda::CheckOrderedAfterWork(state, Id(stream), ptr, found->second.size,
                                   "cuMemFreeAsync");
  auto pool = state.pools.find(found->second.pool);
  if (pool != state.pools.end()) pool->second.used -= found->second.size;
  fake_cuda::UnmapHost(reinterpret_cast<void*>(ptr), found->second.mapped);
  state.blocks.erase(found);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

}  // extern "C"
