// Control of the fake CUDA driver (libtensormem_fake_cuda.so) from tests.
//
// The fake exports the driver entry points tensormem uses, over host memory,
// plus these functions. Tests link the library, point TENSORMEM_CUDA_DRIVER
// at it (the loader then gets the same copy), and reset it per test.
//
//   fake_cuda_reset(/*device_count=*/2, /*memory_per_device=*/1 << 30);
//   fake_cuda_fail_call("cuMemCreate", /*nth=*/2, CUDA_ERROR_OUT_OF_MEMORY);
//   ... use tensormem ...
//   EXPECT_EQ(fake_cuda_live_objects(), 0) << fake_cuda_leak_report();
//
// Without a reset the fake has $FAKE_CUDA_DEVICES devices (default 2) of
// $FAKE_CUDA_MEMORY bytes each (default 4 GiB).
#ifndef TENSORMEM_TESTS_CUDA_FAKE_CUDA_CONTROL_H_
#define TENSORMEM_TESTS_CUDA_FAKE_CUDA_CONTROL_H_

#include <cuda.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Frees everything the fake holds and starts again with this many devices of
// `memory_per_device` bytes; clears fault injection and the call log.
void fake_cuda_reset(int device_count, uint64_t memory_per_device);
// Pinned host memory cuMemHostAlloc may hand out in total (default 16 GiB).
void fake_cuda_set_host_limit(uint64_t bytes);
// The `nth` (1-based, counted from now) call of `entry_point` (the name
// without its _v2 suffix, e.g. "cuMemAlloc") returns `error` and does nothing.
void fake_cuda_fail_call(const char* entry_point, int nth, CUresult error);
// The calls since the last reset or clear, one per line with their key
// arguments ("cuMemCreate size=2097152 device=0 -> CUDA_SUCCESS"). The text
// stays valid until the next call into the fake.
const char* fake_cuda_call_log(void);
void fake_cuda_clear_call_log(void);
// How many calls of `entry_point` were made since the last reset.
int fake_cuda_call_count(const char* entry_point);
// Device memory held on `device`: cuMemAlloc blocks, physical handles and
// memory pools' reserves.
uint64_t fake_cuda_device_used(int device);
// Live allocations, handles, mappings, reservations, pools, streams and
// events, and what they are.
int fake_cuda_live_objects(void);
const char* fake_cuda_leak_report(void);
// Queues a kernel on `stream` that uses [ptr, ptr + bytes): pending until
// that stream or the context is synchronised (cuStreamSynchronize,
// cuCtxSynchronize, cuMemFree). Events recorded after it are not complete
// (cuEventQuery: CUDA_ERROR_NOT_READY) until then.
void fake_cuda_launch(CUstream stream, CUdeviceptr ptr, size_t bytes);
// What pending work caught since the last reset, one line each: memory
// unmapped under it, or another stream using its memory with no event wait.
// Empty when nothing was caught.
const char* fake_cuda_violations(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TENSORMEM_TESTS_CUDA_FAKE_CUDA_CONTROL_H_
