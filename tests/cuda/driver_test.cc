// The driver loader: loading, missing drivers, error messages.
#include <string>

#include "cuda/cuda_test_env.h"
#include "gmock/gmock.h"
#include "tensormem/cuda/cuda_sub_allocators.h"
#include "tensormem/cuda/cuda_vmm_sub_allocator.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using DriverTest = CudaTest;

TEST_F(DriverTest, AMissingDriverIsAStatus) {
  absl::StatusOr<std::unique_ptr<CudaDriver>> driver =
      CudaDriver::Load("/nonexistent/libcuda.so.1");
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(driver.status().message()),
              StartsWith("no CUDA driver found: "));
}

TEST_F(DriverTest, ALibraryWithoutTheEntryPointsIsAStatus) {
  absl::StatusOr<std::unique_ptr<CudaDriver>> driver =
      CudaDriver::Load("libm.so.6");
  ASSERT_FALSE(driver.ok());
  EXPECT_THAT(std::string(driver.status().message()),
              HasSubstr("lacks the entry point cuInit"));
}

TEST_F(DriverTest, ResolvesVersionedSymbols) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  fake_cuda_clear_call_log();
  size_t total = 0;
  ASSERT_TRUE(driver_
                  ->Check(driver_->api().cuDeviceTotalMem(&total, 0),
                          "cuDeviceTotalMem")
                  .ok());
  EXPECT_EQ(total, kDeviceMemory);
  // The fake exports cuDeviceTotalMem_v2 only (cuda.h's mapping), so a loader
  // resolving the unversioned name would have failed to load it at all.
  EXPECT_THAT(std::string(fake_cuda_call_log()),
              HasSubstr("cuDeviceTotalMem device=0 -> CUDA_SUCCESS"));
  EXPECT_EQ(*driver_->DeviceCount(), 2);
  EXPECT_EQ(*driver_->TotalMemory(1), kDeviceMemory);
}

TEST_F(DriverTest, ErrorsNameTheCallAndTheCudaError) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  fake_cuda_fail_call("cuMemCreate", 1, CUDA_ERROR_OUT_OF_MEMORY);
  CudaSubAllocatorParams params;
  params.reserve_bytes = 64 * kMiB;
  auto vmm = CudaVmmSubAllocator::Create(params);
  ASSERT_TRUE(vmm.ok()) << vmm.status();
  size_t received = 0;
  EXPECT_EQ((*vmm)->Alloc(2 * kMiB, 256, &received), nullptr);
  EXPECT_EQ((*vmm)->last_error().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ((*vmm)->last_error().message(),
            "cuMemCreate(2 MiB, device 0): CUDA_ERROR_OUT_OF_MEMORY");
}

TEST_F(DriverTest, ExplainsABadDevice) {
  const absl::StatusOr<int> count = driver_->DeviceCount();
  ASSERT_TRUE(count.ok());
  absl::Status status = driver_->MakeCurrent(*count);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(status.message()),
      HasSubstr("CUDA device " + std::to_string(*count) + " does not exist"));
  EXPECT_FALSE(driver_->MakeCurrent(-1).ok());
}

// Every kind works on its own device and gives the caller its context back
// (a PyTorch thread on device 0 freeing a tensor of device 1 stays on 0).
TEST_F(DriverTest, SubAllocatorsRestoreTheCallersContext) {
  const absl::StatusOr<int> count = driver_->DeviceCount();
  ASSERT_TRUE(count.ok());
  if (*count < 2) GTEST_SKIP() << "needs two devices";
  ASSERT_TRUE(driver_->MakeCurrent(0).ok());
  CUcontext callers = nullptr;
  ASSERT_EQ(driver_->api().cuCtxGetCurrent(&callers), CUDA_SUCCESS);
  auto still_callers = [&] {
    CUcontext now = nullptr;
    return driver_->api().cuCtxGetCurrent(&now) == CUDA_SUCCESS &&
           now == callers;
  };
  for (std::string_view kind : CudaSubAllocatorKinds()) {
    SCOPED_TRACE(kind);
    CudaSubAllocatorParams params;
    params.device = 1;
    params.reserve_bytes = 64 * kMiB;
    auto allocator = CreateCudaSubAllocator(kind, params);
    ASSERT_TRUE(allocator.ok()) << allocator.status();
    EXPECT_TRUE(still_callers());
    size_t received = 0;
    void* block = (*allocator)->Alloc(2 * kMiB, 256, &received);
    ASSERT_NE(block, nullptr);
    EXPECT_TRUE(still_callers());
    (*allocator)->Free(block, received);
    EXPECT_TRUE(still_callers());
    allocator->reset();
    EXPECT_TRUE(still_callers());
  }
}

TEST(DescribeBytesTest, UsesTheLargestExactUnit) {
  EXPECT_EQ(DescribeBytes(2 * kMiB), "2 MiB");
  EXPECT_EQ(DescribeBytes(3 * kGiB), "3 GiB");
  EXPECT_EQ(DescribeBytes(1000), "1000 bytes");
  EXPECT_EQ(DescribeBytes(0), "0 bytes");
  EXPECT_EQ(DescribeBytes(2 * kMiB + 1024), "2049 KiB");
}

}  // namespace
}  // namespace tensormem
