// The fake CUDA driver: cuMemAlloc, pinned host memory and virtual memory
// management (reserve, create, map, set access, unmap, release).
//
// Reserved ranges are PROT_NONE host mappings; a physical handle is a memfd,
// mapped into a reservation with MAP_FIXED, so mapped addresses are real
// memory that becomes accessible only after cuMemSetAccess. The rules are the
// driver's: sizes, offsets and addresses in granularity multiples, mappings
// only inside a reservation and never over another one. Stricter than the
// driver on two points, to catch ordering mistakes: releasing a handle that is
// still mapped, and freeing a reservation that still has mappings, fail.
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "cuda/fake_driver_state.h"

namespace fake_cuda {
namespace {

bool Aligned(uint64_t value) { return value % kGranularity == 0; }

// The reservation holding all of [start, start + size), if one does.
bool InsideReservation(const State& state, uintptr_t start, uint64_t size) {
  auto after = state.reservations.upper_bound(start);
  if (after == state.reservations.begin()) return false;
  const auto& [begin, length] = *std::prev(after);
  return start >= begin && start + size <= begin + length;
}

bool OverlapsMapping(const State& state, uintptr_t start, uint64_t size) {
  auto after = state.mappings.lower_bound(start + size);
  if (after == state.mappings.begin()) return false;
  const auto& [begin, mapping] = *std::prev(after);
  return begin + mapping.size > start;
}

// True when [start, start + size) is exactly a run of whole, adjacent
// mappings.
bool CoveredByMappings(const State& state, uintptr_t start, uint64_t size) {
  uintptr_t at = start;
  while (at < start + size) {
    auto found = state.mappings.find(at);
    if (found == state.mappings.end()) return false;
    at += found->second.size;
  }
  return at == start + size;
}

void* Reinstate(uintptr_t start, uint64_t size) {
  return mmap(reinterpret_cast<void*>(start), size, PROT_NONE,
              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

}  // namespace
}  // namespace fake_cuda

using fake_cuda::Aligned;
using fake_cuda::kGranularity;

extern "C" {

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* ptr, size_t bytes) {
  FAKE_CUDA_ENTER("size=" + std::to_string(bytes));
  if (CUresult error = fake_cuda::RequireContext(state))
    FAKE_CUDA_RETURN(error);
  if (bytes == 0 || ptr == nullptr) FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  const int device = fake_cuda::CurrentDevice();
  // The driver hands out whole 512-byte units at least.
  const uint64_t charged = (bytes + 511) / 512 * 512;
  if (!fake_cuda::ChargeDevice(state, device, charged)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
  }
  void* memory = fake_cuda::MapHost(charged);
  if (memory == nullptr) {
    state.devices[device].used -= charged;
    FAKE_CUDA_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
  }
  state.blocks[reinterpret_cast<uintptr_t>(memory)] =
      fake_cuda::Block{charged, charged, device};
  *ptr = reinterpret_cast<CUdeviceptr>(memory);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemFree(CUdeviceptr ptr) {
  FAKE_CUDA_ENTER("");
  if (CUresult error = fake_cuda::RequireContext(state))
    FAKE_CUDA_RETURN(error);
  auto found = state.blocks.find(ptr);
  if (found == state.blocks.end() ||
      found->second.kind == fake_cuda::BlockKind::kPinnedHost) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);  // unknown or freed twice
  }
  const fake_cuda::Block block = found->second;
  fake_cuda::CompleteWork(state, 0, /*all=*/true);  // cuMemFree waits, too
  if (block.kind == fake_cuda::BlockKind::kPool) {
    auto pool = state.pools.find(block.pool);
    if (pool != state.pools.end()) pool->second.used -= block.size;
  } else {
    state.devices[block.device].used -= block.size;
  }
  fake_cuda::UnmapHost(reinterpret_cast<void*>(ptr), block.mapped);
  state.blocks.erase(found);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemHostAlloc(void** ptr, size_t bytes,
                                unsigned int /*flags*/) {
  FAKE_CUDA_ENTER("size=" + std::to_string(bytes));
  if (CUresult error = fake_cuda::RequireContext(state))
    FAKE_CUDA_RETURN(error);
  if (bytes == 0 || ptr == nullptr) FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  if (bytes > state.host_limit - state.host_used) {
    FAKE_CUDA_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
  }
  void* memory = fake_cuda::MapHost(bytes);
  if (memory == nullptr) FAKE_CUDA_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
  state.host_used += bytes;
  state.blocks[reinterpret_cast<uintptr_t>(memory)] =
      fake_cuda::Block{bytes, bytes, fake_cuda::CurrentDevice(),
                       fake_cuda::BlockKind::kPinnedHost};
  *ptr = memory;
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemFreeHost(void* ptr) {
  FAKE_CUDA_ENTER("");
  auto found = state.blocks.find(reinterpret_cast<uintptr_t>(ptr));
  if (found == state.blocks.end() ||
      found->second.kind != fake_cuda::BlockKind::kPinnedHost) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  state.host_used -= found->second.size;
  fake_cuda::UnmapHost(ptr, found->second.mapped);
  state.blocks.erase(found);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemGetAllocationGranularity(
    size_t* granularity, const CUmemAllocationProp* prop,
    CUmemAllocationGranularity_flags /*option*/) {
  FAKE_CUDA_ENTER("");
  if (granularity == nullptr || prop == nullptr ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  if (!fake_cuda::ValidDevice(state, prop->location.id)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_DEVICE);
  }
  *granularity = kGranularity;
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size,
                                     size_t alignment, CUdeviceptr /*address*/,
                                     unsigned long long flags) {
  FAKE_CUDA_ENTER("size=" + std::to_string(size));
  if (!state.initialized) FAKE_CUDA_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (size == 0 || !Aligned(size) || flags != 0 ||
      (alignment & (alignment - 1)) != 0) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  const uint64_t align = alignment > kGranularity ? alignment : kGranularity;
  void* raw = mmap(nullptr, size + align, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) FAKE_CUDA_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = (begin + align - 1) / align * align;
  if (start > begin) munmap(raw, start - begin);
  if (begin + align > start) {
    munmap(reinterpret_cast<void*>(start + size), begin + align - start);
  }
  state.reservations[start] = size;
  *ptr = start;
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  FAKE_CUDA_ENTER("size=" + std::to_string(size));
  auto found = state.reservations.find(ptr);
  if (found == state.reservations.end() || found->second != size ||
      fake_cuda::OverlapsMapping(state, ptr, size)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  munmap(reinterpret_cast<void*>(ptr), size);
  state.reservations.erase(found);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                             const CUmemAllocationProp* prop,
                             unsigned long long flags) {
  FAKE_CUDA_ENTER("size=" + std::to_string(size) + " device=" +
                  std::to_string(prop == nullptr ? -1 : prop->location.id));
  if (!state.initialized) FAKE_CUDA_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (handle == nullptr || prop == nullptr || size == 0 || !Aligned(size) ||
      flags != 0 || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  const int device = prop->location.id;
  if (!fake_cuda::ValidDevice(state, device)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_DEVICE);
  }
  if (!fake_cuda::ChargeDevice(state, device, size)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
  }
  const int fd = memfd_create("fake-cuda-handle", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
    if (fd >= 0) close(fd);
    state.devices[device].used -= size;
    FAKE_CUDA_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
  }
  const uint64_t id = state.next_id++;
  state.handles[id] = fake_cuda::Handle{size, device, fd, 0};
  *handle = id;
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  FAKE_CUDA_ENTER("handle=" + std::to_string(handle));
  auto found = state.handles.find(handle);
  if (found == state.handles.end() || found->second.mappings > 0) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  close(found->second.fd);
  state.devices[found->second.device].used -= found->second.size;
  state.handles.erase(found);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle,
                          unsigned long long flags) {
  FAKE_CUDA_ENTER("size=" + std::to_string(size) +
                  " handle=" + std::to_string(handle));
  auto found = state.handles.find(handle);
  if (found == state.handles.end()) FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_HANDLE);
  if (size == 0 || !Aligned(ptr) || !Aligned(size) || !Aligned(offset) ||
      flags != 0 || offset + size > found->second.size ||
      !fake_cuda::InsideReservation(state, ptr, size) ||
      fake_cuda::OverlapsMapping(state, ptr, size)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  void* mapped = mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE,
                      MAP_SHARED | MAP_FIXED, found->second.fd,
                      static_cast<off_t>(offset));
  if (mapped == MAP_FAILED) FAKE_CUDA_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
  ++found->second.mappings;
  state.mappings[ptr] = fake_cuda::Mapping{size, handle};
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
  FAKE_CUDA_ENTER("size=" + std::to_string(size));
  if (size == 0 || !fake_cuda::CoveredByMappings(state, ptr, size)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  fake_cuda::CheckNoWorkOn(state, ptr, size, "cuMemUnmap");
  for (uintptr_t at = ptr; at < ptr + size;) {
    auto mapping = state.mappings.find(at);
    --state.handles[mapping->second.handle].mappings;
    at += mapping->second.size;
    state.mappings.erase(mapping);
  }
  fake_cuda::Reinstate(ptr, size);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size,
                                const CUmemAccessDesc* descriptors,
                                size_t count) {
  FAKE_CUDA_ENTER("size=" + std::to_string(size) +
                  " devices=" + std::to_string(count));
  if (size == 0 || descriptors == nullptr || count == 0 ||
      !fake_cuda::CoveredByMappings(state, ptr, size)) {
    FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  int protection = PROT_NONE;
  for (size_t i = 0; i < count; ++i) {
    if (descriptors[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        !fake_cuda::ValidDevice(state, descriptors[i].location.id)) {
      FAKE_CUDA_RETURN(CUDA_ERROR_INVALID_DEVICE);
    }
    if (descriptors[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      protection = PROT_READ | PROT_WRITE;
    } else if (descriptors[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ &&
               protection == PROT_NONE) {
      protection = PROT_READ;
    }
  }
  mprotect(reinterpret_cast<void*>(ptr), size, protection);
  FAKE_CUDA_RETURN(CUDA_SUCCESS);
}

}  // extern "C"
