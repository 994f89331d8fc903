// The CUDA sub-allocators: the shared contract, then each kind's own rules.
#include <algorithm>
#include <string>

#include "alloc/sub_allocator_conformance.h"
#include "cuda/cuda_test_env.h"
#include "gmock/gmock.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/alloc/sub_allocator_registry.h"
#include "tensormem/cuda/cuda_async_sub_allocator.h"
#include "tensormem/cuda/cuda_sub_allocators.h"
#include "tensormem/cuda/cuda_vmm_sub_allocator.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;
using Visitors = std::vector<SubAllocator::Visitor>;

SubAllocatorConformanceParam::Factory FactoryFor(std::string kind) {
  return
      [kind](Visitors alloc, Visitors free) -> std::unique_ptr<SubAllocator> {
        CudaSubAllocatorParams params;
        params.reserve_bytes = kGiB;
        params.alloc_visitors = std::move(alloc);
        params.free_visitors = std::move(free);
        absl::StatusOr<std::unique_ptr<SubAllocator>> upstream =
            CreateCudaSubAllocator(kind, params);
        if (!upstream.ok()) {
          ADD_FAILURE() << kind << ": " << upstream.status();
          return nullptr;
        }
        return *std::move(upstream);
      };
}

// Device memory is host memory only on the fake.
INSTANTIATE_TEST_SUITE_P(
    CudaKinds, SubAllocatorConformanceTest,
    ::testing::Values(SubAllocatorConformanceParam{"cuda", FactoryFor("cuda"),
                                                   256, OnFakeDriver()},
                      SubAllocatorConformanceParam{
                          "cuda_host", FactoryFor("cuda-host"), 4096, true},
                      SubAllocatorConformanceParam{"cuda_vmm",
                                                   FactoryFor("cuda-vmm"),
                                                   2 * kMiB, OnFakeDriver()},
                      SubAllocatorConformanceParam{"cuda_async",
                                                   FactoryFor("cuda-async"),
                                                   256, OnFakeDriver()}),
    SubAllocatorConformanceName);

using CudaSubAllocatorTest = CudaTest;

TEST_F(CudaSubAllocatorTest, FactoryKnowsTheKindsAndExplainsTheRest) {
  CudaSubAllocatorParams params;
  params.reserve_bytes = 64 * kMiB;
  for (std::string_view kind : CudaSubAllocatorKinds()) {
    auto upstream = CreateCudaSubAllocator(kind, params);
    ASSERT_TRUE(upstream.ok()) << upstream.status();
    EXPECT_EQ((*upstream)->Name(), kind);
  }
  auto unknown = CreateCudaSubAllocator("cuda-magic", params);
  EXPECT_THAT(std::string(unknown.status().message()),
              HasSubstr("known: cuda, cuda-host, cuda-vmm, cuda-async"));
  params.device = 7;
  EXPECT_THAT(
      std::string(CreateCudaSubAllocator("cuda", params).status().message()),
      HasSubstr("CUDA device 7 does not exist"));
}

TEST_F(CudaSubAllocatorTest, RegisteredKindsServeAllocatorSpecifications) {
  RegisterCudaSubAllocators();
  RegisterCudaSubAllocators();  // idempotent
  std::vector<std::string> kinds;
  for (const SubAllocatorInfo& info : SubAllocatorKinds()) {
    kinds.emplace_back(info.name);
  }
  EXPECT_THAT(kinds, ::testing::IsSupersetOf({"host", "cuda", "cuda-host",
                                              "cuda-vmm", "cuda-async"}));
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "cuda-vmm"), 1);
  AllocatorSpec spec;
  spec.sub_allocator = "cuda-vmm";
  spec.memory_limit = 64 * kMiB;
  spec.capacity = 128 * kMiB;  // cuda-vmm's reservation
  absl::StatusOr<BuiltAllocator> built = CreateAllocator(spec);
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(built->bfc->upstream().Name(), "cuda-vmm");
  void* block = built->allocator->Allocate(kMiB);
  EXPECT_NE(block, nullptr);
  built->allocator->Deallocate(block);
  SubAllocatorParams params;
  params.coalescing = true;
  EXPECT_THAT(
      std::string(CreateSubAllocator("cuda-host", params).status().message()),
      HasSubstr("cannot coalesce"));
}

TEST_F(CudaSubAllocatorTest, CudaMallocRunsOutAndReportsBadFrees) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  CudaMallocSubAllocator cuda(driver_, CudaSubAllocatorParams{});
  EXPECT_EQ(cuda.GetMemoryKind(), MemoryKind::kDevice);
  size_t received = 0;
  void* most = cuda.Alloc(900 * kMiB, 256, &received);
  ASSERT_NE(most, nullptr);
  EXPECT_EQ(fake_cuda_device_used(0), 900 * kMiB);
  EXPECT_EQ(cuda.Alloc(200 * kMiB, 256, &received), nullptr);
  EXPECT_EQ(cuda.last_error().message(),
            "cuMemAlloc(200 MiB, device 0): CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(cuda.Alloc(4096, 512, &received), nullptr);  // beyond 256
  cuda.Free(most, 900 * kMiB);
  cuda.Free(most, 900 * kMiB);  // twice: the driver refuses, we count
  EXPECT_EQ(cuda.failed_frees(), 1);
  EXPECT_THAT(std::string(cuda.last_error().message()),
              HasSubstr("CUDA_ERROR_INVALID_VALUE"));
  EXPECT_EQ(fake_cuda_device_used(0), 0u);
}

TEST_F(CudaSubAllocatorTest, CudaHostIsPinnedAndLimited) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  fake_cuda_set_host_limit(8 * kMiB);
  CudaHostSubAllocator pinned(driver_, CudaSubAllocatorParams{});
  EXPECT_EQ(pinned.GetMemoryKind(), MemoryKind::kHostPinned);
  size_t received = 0;
  void* block = pinned.Alloc(6 * kMiB, 4096, &received);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(pinned.Alloc(4 * kMiB, 0, &received), nullptr);
  EXPECT_THAT(std::string(pinned.last_error().message()),
              HasSubstr("cuMemHostAlloc(4 MiB, device 0)"));
  pinned.Free(block, 6 * kMiB);
  EXPECT_THAT(std::string(fake_cuda_call_log()),
              HasSubstr("cuMemFreeHost -> CUDA_SUCCESS"));
}

TEST_F(CudaSubAllocatorTest, CudaAsyncKeepsItsThresholdAndTrims) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  CudaSubAllocatorParams params;
  params.release_threshold = 4 * kMiB;
  auto pool = CudaAsyncSubAllocator::Create(params);
  ASSERT_TRUE(pool.ok()) << pool.status();
  size_t received = 0;
  void* a = (*pool)->Alloc(6 * kMiB, 256, &received);
  void* b = (*pool)->Alloc(3 * kMiB, 256, &received);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(*(*pool)->UsedBytes(), 9 * kMiB);
  // Grown in 2 MiB steps to 10 MiB, trimmed to what is used at the sync that
  // waits for the allocation.
  EXPECT_EQ(*(*pool)->ReservedBytes(), 9 * kMiB);
  (*pool)->Free(a, 6 * kMiB);
  EXPECT_EQ(*(*pool)->ReservedBytes(), 9 * kMiB);  // kept until a sync
  // The caller's own context (the pool's calls gave back the none it had).
  ASSERT_TRUE(driver_->MakeCurrent(0).ok());
  ASSERT_EQ(driver_->api().cuCtxSynchronize(), CUDA_SUCCESS);
  // Down to the threshold (4 MiB), never below what is in use (3 MiB).
  EXPECT_EQ(*(*pool)->ReservedBytes(), 4 * kMiB);
  (*pool)->Free(b, 3 * kMiB);
  ASSERT_TRUE((*pool)->Trim().ok());
  EXPECT_EQ(*(*pool)->ReservedBytes(), 0u);
  EXPECT_EQ(fake_cuda_device_used(0), 0u);
  EXPECT_THAT(std::string(fake_cuda_call_log()),
              HasSubstr("cuMemPoolSetAttribute attribute=" +
                        std::to_string(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)));
}

// A region serves blocks on any stream: the pool's stream orders with none
// of them, so the region goes back to the pool only after queued work.
TEST_F(CudaSubAllocatorTest, CudaAsyncFreesRegionsOnlyAfterQueuedWork) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  auto pool = CudaAsyncSubAllocator::Create(CudaSubAllocatorParams());
  ASSERT_TRUE(pool.ok()) << pool.status();
  size_t received = 0;
  void* region = (*pool)->Alloc(4 * kMiB, 256, &received);
  ASSERT_NE(region, nullptr);
  CUstream compute = nullptr;  // a stream like PyTorch's: not the pool's
  ASSERT_TRUE(driver_->MakeCurrent(0).ok());
  ASSERT_EQ(driver_->api().cuStreamCreate(&compute, CU_STREAM_NON_BLOCKING),
            CUDA_SUCCESS);
  fake_cuda_launch(compute, reinterpret_cast<CUdeviceptr>(region), kMiB);
  (*pool)->Free(region, received);
  EXPECT_STREQ(fake_cuda_violations(), "");
  EXPECT_EQ((*pool)->failed_frees(), 0);
  EXPECT_EQ(driver_->api().cuStreamDestroy(compute), CUDA_SUCCESS);
}

}  // namespace
}  // namespace tensormem
