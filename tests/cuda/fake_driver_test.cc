// The fake driver itself: the rules it enforces are the ones the real driver
// has, so code that passes on the fake makes valid calls.
#include <string>

#include "cuda/cuda_test_env.h"
#include "gmock/gmock.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

class FakeDriverTest : public CudaTest {
 protected:
  void SetUp() override {
    CudaTest::SetUp();
    if (!OnFakeDriver()) GTEST_SKIP() << "tests the fake driver";
    ASSERT_TRUE(driver_->MakeCurrent(0).ok());
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = 0;
  }
  const CudaDriverApi& api() { return driver_->api(); }
  // Two streams, 4 KiB of work queued on the first at kBlock, and an event
  // recorded after it.
  void QueueWorkThenEvent(CUstream& first, CUstream& second, CUevent& event) {
    ASSERT_EQ(api().cuStreamCreate(&first, 0), CUDA_SUCCESS);
    ASSERT_EQ(api().cuStreamCreate(&second, 0), CUDA_SUCCESS);
    fake_cuda_launch(first, kBlock, 4096);
    ASSERT_EQ(api().cuEventCreate(&event, 0), CUDA_SUCCESS);
    ASSERT_EQ(api().cuEventRecord(event, first), CUDA_SUCCESS);
  }
  static constexpr CUdeviceptr kBlock = 1 << 20;

  CUmemAllocationProp prop_ = {};
};

TEST_F(FakeDriverTest, VirtualMemoryRules) {
  constexpr size_t kGranule = 2 * kMiB;
  CUdeviceptr base = 0;
  EXPECT_EQ(api().cuMemAddressReserve(&base, kGranule + 1, 0, 0, 0),
            CUDA_ERROR_INVALID_VALUE);  // misaligned size
  ASSERT_EQ(api().cuMemAddressReserve(&base, 4 * kGranule, 0, 0, 0),
            CUDA_SUCCESS);
  CUmemGenericAllocationHandle handle = 0;
  EXPECT_EQ(api().cuMemCreate(&handle, kMiB, &prop_, 0),
            CUDA_ERROR_INVALID_VALUE);  // not a granule multiple
  ASSERT_EQ(api().cuMemCreate(&handle, kGranule, &prop_, 0), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemMap(base + 4096, kGranule, 0, handle, 0),
            CUDA_ERROR_INVALID_VALUE);  // misaligned address
  EXPECT_EQ(api().cuMemMap(base + 4 * kGranule, kGranule, 0, handle, 0),
            CUDA_ERROR_INVALID_VALUE);  // outside the reservation
  ASSERT_EQ(api().cuMemMap(base, kGranule, 0, handle, 0), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemMap(base, kGranule, 0, handle, 0),
            CUDA_ERROR_INVALID_VALUE);  // an occupied range
  EXPECT_EQ(api().cuMemRelease(handle), CUDA_ERROR_INVALID_VALUE);  // mapped
  EXPECT_EQ(api().cuMemAddressFree(base, 4 * kGranule),
            CUDA_ERROR_INVALID_VALUE);  // still has a mapping
  CUmemAccessDesc access = {};
  access.location = prop_.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ASSERT_EQ(api().cuMemSetAccess(base, kGranule, &access, 1), CUDA_SUCCESS);
  reinterpret_cast<char*>(base)[kGranule - 1] = 1;  // now writable
  EXPECT_EQ(fake_cuda_device_used(0), kGranule);
  EXPECT_EQ(api().cuMemUnmap(base, kGranule), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemRelease(handle), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemRelease(handle), CUDA_ERROR_INVALID_VALUE);  // twice
  EXPECT_EQ(api().cuMemAddressFree(base, 4 * kGranule), CUDA_SUCCESS);
  EXPECT_EQ(fake_cuda_device_used(0), 0u);
}

TEST_F(FakeDriverTest, MemoryCallsNeedAContextAndFreesAreChecked) {
  ASSERT_EQ(api().cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  CUdeviceptr ptr = 0;
  EXPECT_EQ(api().cuMemAlloc(&ptr, 4096), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_TRUE(driver_->MakeCurrent(1).ok());
  ASSERT_EQ(api().cuMemAlloc(&ptr, 1000), CUDA_SUCCESS);
  EXPECT_EQ(fake_cuda_device_used(1), 1024u);  // whole 512-byte units
  EXPECT_EQ(api().cuMemAlloc(&ptr, 2 * kDeviceMemory),
            CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(api().cuMemFree(ptr), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemFree(ptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeDriverTest, FailsTheNthCallAndLogsEveryCall) {
  fake_cuda_fail_call("cuMemAlloc", 2, CUDA_ERROR_OUT_OF_MEMORY);
  CUdeviceptr first = 0, second = 0, third = 0;
  EXPECT_EQ(api().cuMemAlloc(&first, 4096), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemAlloc(&second, 4096), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(api().cuMemAlloc(&third, 4096), CUDA_SUCCESS);
  EXPECT_EQ(fake_cuda_call_count("cuMemAlloc"), 3);
  EXPECT_THAT(std::string(fake_cuda_call_log()),
              HasSubstr("cuMemAlloc size=4096 (injected) -> "
                        "CUDA_ERROR_OUT_OF_MEMORY"));
  EXPECT_EQ(fake_cuda_live_objects(), 2);
  EXPECT_THAT(std::string(fake_cuda_leak_report()), HasSubstr("of 4096 bytes"));
  api().cuMemFree(first);
  api().cuMemFree(third);
}

// What the fake must catch for the tests that use it to mean anything: a
// second stream racing the first, and memory unmapped under queued work. Each
// test ends with a reset, which also clears what was caught.
TEST_F(FakeDriverTest, CatchesStreamsRacingOverMemory) {
  CUstream first = nullptr, second = nullptr;
  CUevent event = nullptr;
  QueueWorkThenEvent(first, second, event);
  EXPECT_EQ(api().cuEventQuery(event), CUDA_ERROR_NOT_READY);
  fake_cuda_launch(second, kBlock + 4096, 4096);  // other memory
  EXPECT_STREQ(fake_cuda_violations(), "");
  fake_cuda_launch(second, kBlock + 2048, 4096);  // overlapping, unordered
  EXPECT_THAT(std::string(fake_cuda_violations()),
              HasSubstr("while stream " +
                        std::to_string(reinterpret_cast<uintptr_t>(first)) +
                        "'s work there is pending, with no event between"));
  fake_cuda_reset(2, kDeviceMemory);
}

TEST_F(FakeDriverTest, AnEventWaitOrdersStreamsAndSynchronisationCompletes) {
  CUstream first = nullptr, second = nullptr;
  CUevent event = nullptr;
  QueueWorkThenEvent(first, second, event);
  ASSERT_EQ(api().cuStreamWaitEvent(second, event, 0), CUDA_SUCCESS);
  fake_cuda_launch(second, kBlock, 4096);  // ordered after the event
  ASSERT_EQ(api().cuStreamSynchronize(first), CUDA_SUCCESS);
  EXPECT_EQ(api().cuEventQuery(event), CUDA_SUCCESS);
  EXPECT_STREQ(fake_cuda_violations(), "");
  fake_cuda_reset(2, kDeviceMemory);
}

TEST_F(FakeDriverTest, CatchesMemoryUnmappedUnderQueuedWork) {
  constexpr size_t kGranule = 2 * kMiB;
  CUdeviceptr base = 0;
  ASSERT_EQ(api().cuMemAddressReserve(&base, 2 * kGranule, 0, 0, 0),
            CUDA_SUCCESS);
  CUmemGenericAllocationHandle handles[2] = {};
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(api().cuMemCreate(&handles[i], kGranule, &prop_, 0),
              CUDA_SUCCESS);
    ASSERT_EQ(api().cuMemMap(base + i * kGranule, kGranule, 0, handles[i], 0),
              CUDA_SUCCESS);
  }
  fake_cuda_launch(nullptr, base, kGranule);
  ASSERT_EQ(api().cuCtxSynchronize(), CUDA_SUCCESS);  // done: safe to unmap
  EXPECT_EQ(api().cuMemUnmap(base, kGranule), CUDA_SUCCESS);
  EXPECT_STREQ(fake_cuda_violations(), "");
  fake_cuda_launch(nullptr, base + kGranule, 4096);
  EXPECT_EQ(api().cuMemUnmap(base + kGranule, kGranule), CUDA_SUCCESS);
  EXPECT_THAT(std::string(fake_cuda_violations()),
              HasSubstr("cuMemUnmap of [" + std::to_string(base + kGranule)));
  fake_cuda_reset(2, kDeviceMemory);
}

}  // namespace
}  // namespace tensormem
