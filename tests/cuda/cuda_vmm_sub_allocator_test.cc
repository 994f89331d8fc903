// cuda-vmm: reservation, contiguous growth, release, and clean-up after every
// kind of driver failure.
#include "tensormem/cuda/cuda_vmm_sub_allocator.h"

#include <cstring>
#include <string>

#include "cuda/cuda_test_env.h"
#include "gmock/gmock.h"
#include "tensormem/core/checked_math.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

class CudaVmmTest : public CudaTest {
 protected:
  std::unique_ptr<CudaVmmSubAllocator> Create(uint64_t reserve) {
    CudaSubAllocatorParams params;
    params.reserve_bytes = reserve;
    auto vmm = CudaVmmSubAllocator::Create(params);
    EXPECT_TRUE(vmm.ok()) << vmm.status();
    return vmm.ok() ? *std::move(vmm) : nullptr;
  }
};

TEST_F(CudaVmmTest, ReservesTwiceTheDeviceByDefault) {
  // Real devices are not whole granules (an H200 has 150,109,880,320 bytes):
  // the reservation is rounded up to the granularity.
  if (OnFakeDriver()) fake_cuda_reset(2, kDeviceMemory + 64 * kKiB);
  auto vmm = Create(0);
  ASSERT_NE(vmm, nullptr);
  EXPECT_EQ(vmm->reserved_bytes(),
            CheckedRoundUp(2 * *driver_->TotalMemory(0), vmm->granularity()));
  EXPECT_EQ(
      reinterpret_cast<uintptr_t>(vmm->BaseAddress()) % vmm->granularity(), 0u);
}

TEST_F(CudaVmmTest, GrowsContiguouslyInGranules) {
  auto vmm = Create(256 * kMiB);
  ASSERT_NE(vmm, nullptr);
  const uint64_t granule = vmm->granularity();
  size_t first_size = 0, second_size = 0, third_size = 0;
  char* first = static_cast<char*>(vmm->Alloc(granule, 256, &first_size));
  char* second = static_cast<char*>(vmm->Alloc(1000, 256, &second_size));
  char* third = static_cast<char*>(vmm->Alloc(3 * granule, 256, &third_size));
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(first, vmm->BaseAddress());
  EXPECT_EQ(second, first + first_size);
  EXPECT_EQ(second_size, granule);  // rounded up to a whole granule
  EXPECT_EQ(third, second + second_size);
  EXPECT_EQ(vmm->region_count(), 3u);
  EXPECT_EQ(vmm->handle_count(), 5u);  // one per granule
  EXPECT_EQ(vmm->mapped_bytes(), 5 * granule);
  if (OnFakeDriver()) {
    EXPECT_EQ(fake_cuda_device_used(0), 5 * granule);
    std::memset(first, 7, first_size + second_size + third_size);  // mapped
  }
  // A hole below does not break contiguity at the top.
  vmm->Free(second, second_size);
  size_t fourth_size = 0;
  char* fourth = static_cast<char*>(vmm->Alloc(granule, 256, &fourth_size));
  EXPECT_EQ(fourth, third + third_size);
  if (OnFakeDriver()) {
    EXPECT_EQ(fake_cuda_device_used(0), 5 * granule);
  }
}

TEST_F(CudaVmmTest, FreeReturnsMemoryAndRejectsStrangers) {
  auto vmm = Create(64 * kMiB);
  size_t received = 0;
  void* region = vmm->Alloc(4 * kMiB, 256, &received);
  ASSERT_NE(region, nullptr);
  vmm->Free(region, received / 2);  // wrong size: refused, region kept
  EXPECT_EQ(vmm->failed_frees(), 1);
  EXPECT_EQ(vmm->region_count(), 1u);
  vmm->Free(region, received);
  EXPECT_EQ(vmm->region_count(), 0u);
  EXPECT_EQ(vmm->handle_count(), 0u);
  vmm->Free(region, received);  // twice
  EXPECT_EQ(vmm->failed_frees(), 2);
  if (OnFakeDriver()) {
    EXPECT_EQ(fake_cuda_device_used(0), 0u);
  }
  EXPECT_EQ(vmm->Alloc(4 * kMiB, 256, &received), region);  // reused
  vmm->Free(region, received);
}

TEST_F(CudaVmmTest, RunsOutOfReservationWithAClearError) {
  auto vmm = Create(8 * kMiB);
  size_t received = 0;
  void* all = vmm->Alloc(8 * kMiB, 256, &received);
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(vmm->Alloc(1, 256, &received), nullptr);
  EXPECT_THAT(std::string(vmm->last_error().message()),
              HasSubstr("do not fit in the reserved 8 MiB"));
  vmm->Free(all, 8 * kMiB);
}

TEST_F(CudaVmmTest, RunsOutOfDeviceMemory) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  auto vmm = Create(0);
  size_t received = 0;
  void* most = vmm->Alloc(kDeviceMemory - 2 * kMiB, 256, &received);
  ASSERT_NE(most, nullptr);
  EXPECT_EQ(vmm->Alloc(4 * kMiB, 256, &received), nullptr);
  // The first granule fitted, the second did not: the first went back too.
  EXPECT_EQ(vmm->last_error().message(),
            "cuMemCreate(2 MiB, device 0): CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(fake_cuda_device_used(0), kDeviceMemory - 2 * kMiB);
  // The range was given back: what still fits goes right after `most`.
  void* last = vmm->Alloc(2 * kMiB, 256, &received);
  EXPECT_EQ(last, static_cast<char*>(most) + kDeviceMemory - 2 * kMiB);
  vmm->Free(last, 2 * kMiB);
  vmm->Free(most, kDeviceMemory - 2 * kMiB);
}

// Whatever step fails, nothing is leaked (the fixture checks at the end) and
// the addresses are reused by the next attempt.
TEST_F(CudaVmmTest, UndoesEveryStepOnFailure) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  for (const char* failing : {"cuMemCreate", "cuMemMap", "cuMemSetAccess"}) {
    SCOPED_TRACE(failing);
    auto vmm = Create(64 * kMiB);
    fake_cuda_fail_call(failing, 1, CUDA_ERROR_INVALID_VALUE);
    size_t received = 0;
    EXPECT_EQ(vmm->Alloc(2 * kMiB, 256, &received), nullptr);
    EXPECT_THAT(std::string(vmm->last_error().message()), HasSubstr(failing));
    EXPECT_EQ(fake_cuda_device_used(0), 0u);
    void* retry = vmm->Alloc(2 * kMiB, 256, &received);
    EXPECT_EQ(retry, vmm->BaseAddress());
    vmm->Free(retry, received);
  }
}

TEST_F(CudaVmmTest, GivesAccessToEveryDeviceAsked) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  CudaSubAllocatorParams params;
  params.reserve_bytes = 64 * kMiB;
  params.access_devices = {0, 1};
  auto vmm = CudaVmmSubAllocator::Create(params);
  ASSERT_TRUE(vmm.ok());
  fake_cuda_clear_call_log();
  size_t received = 0;
  void* region = (*vmm)->Alloc(2 * kMiB, 256, &received);
  ASSERT_NE(region, nullptr);
  EXPECT_THAT(std::string(fake_cuda_call_log()),
              HasSubstr("cuMemSetAccess size=2097152 devices=2 -> "
                        "CUDA_SUCCESS"));
  params.access_devices = {0, 5};
  auto bad = CudaVmmSubAllocator::Create(params);
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ((*bad)->Alloc(2 * kMiB, 256, &received), nullptr);
  EXPECT_THAT(std::string((*bad)->last_error().message()),
              HasSubstr("CUDA_ERROR_INVALID_DEVICE"));
}

TEST_F(CudaVmmTest, DestructionReleasesHandlesThenTheReservation) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  {
    auto vmm = Create(64 * kMiB);
    size_t received = 0;
    ASSERT_NE(vmm->Alloc(2 * kMiB, 256, &received), nullptr);
    ASSERT_NE(vmm->Alloc(6 * kMiB, 256, &received), nullptr);
    fake_cuda_clear_call_log();
  }
  const std::string log = fake_cuda_call_log();
  EXPECT_LT(log.find("cuMemUnmap"), log.find("cuMemRelease"));
  EXPECT_LT(log.rfind("cuMemRelease"), log.find("cuMemAddressFree"));
  EXPECT_EQ(fake_cuda_call_count("cuMemRelease"), 4);  // 1 + 3 granules
  EXPECT_EQ(fake_cuda_device_used(0), 0u);
}

TEST_F(CudaVmmTest, DecommitsAndRecommitsWholeGranules) {
  auto vmm = Create(64 * kMiB);
  const uint64_t granule = vmm->granularity();
  EXPECT_EQ(vmm->DecommitGranularity(), granule);
  size_t received = 0;
  char* region = static_cast<char*>(vmm->Alloc(4 * granule, 256, &received));
  ASSERT_NE(region, nullptr);
  ASSERT_TRUE(vmm->Decommit(region + granule, 2 * granule));
  EXPECT_EQ(vmm->mapped_bytes(), 2 * granule);
  EXPECT_EQ(vmm->handle_count(), 2u);
  if (OnFakeDriver()) {
    EXPECT_EQ(fake_cuda_device_used(0), 2 * granule);
    std::memset(region, 1, granule);  // the rest stays mapped
    std::memset(region + 3 * granule, 3, granule);
  }
  ASSERT_TRUE(vmm->Recommit(region + 2 * granule, granule));
  EXPECT_EQ(vmm->mapped_bytes(), 3 * granule);
  if (OnFakeDriver()) {
    std::memset(region + 2 * granule, 2, granule);  // writable again
    EXPECT_EQ(region[0], 1);
    EXPECT_EQ(region[3 * granule], 3);
  }
  EXPECT_EQ(vmm->failed_frees(), 0);
  // Freed with a granule still decommitted: everything mapped goes back.
  vmm->Free(region, received);
  EXPECT_EQ(vmm->mapped_bytes(), 0u);
  EXPECT_EQ(vmm->handle_count(), 0u);
  if (OnFakeDriver()) {
    EXPECT_EQ(fake_cuda_device_used(0), 0u);
  }
}

TEST_F(CudaVmmTest, ChangesWholeGranulesOfAdjacentRegionsOnly) {
  auto vmm = Create(64 * kMiB);
  const uint64_t granule = vmm->granularity();
  size_t first_size = 0, second_size = 0;
  char* first = static_cast<char*>(vmm->Alloc(2 * granule, 256, &first_size));
  char* second = static_cast<char*>(vmm->Alloc(granule, 256, &second_size));
  ASSERT_EQ(second, first + first_size);
  ASSERT_TRUE(vmm->Decommit(first + granule, granule));
  EXPECT_FALSE(vmm->Decommit(first + 256, granule));          // not aligned
  EXPECT_FALSE(vmm->Decommit(first, granule / 2));            // part of one
  EXPECT_FALSE(vmm->Decommit(first, 2 * granule));            // one is gone
  EXPECT_FALSE(vmm->Decommit(second, 2 * granule));           // past the end
  EXPECT_FALSE(vmm->Decommit(first + 8 * granule, granule));  // no region
  EXPECT_FALSE(vmm->Recommit(first, 2 * granule));            // one is mapped
  EXPECT_FALSE(vmm->Recommit(second, granule));               // mapped
  EXPECT_EQ(vmm->failed_frees(), 7);  // each refusal reported and counted
  EXPECT_EQ(vmm->mapped_bytes(), 2 * granule);  // nothing changed
  EXPECT_TRUE(vmm->Recommit(first + granule, granule));
  // The BFC merges contiguous regions into one free chunk, so the granules
  // it gives back may cross from one region into the next.
  ASSERT_TRUE(vmm->Decommit(first + granule, 2 * granule));
  EXPECT_EQ(vmm->mapped_bytes(), granule);
  ASSERT_TRUE(vmm->Recommit(first + granule, 2 * granule));
  EXPECT_EQ(vmm->mapped_bytes(), 3 * granule);
  vmm->Free(second, second_size);
  vmm->Free(first, first_size);
  EXPECT_EQ(vmm->mapped_bytes(), 0u);
}

TEST_F(CudaVmmTest, LargeRegionsAreOneHandleAndStayWhole) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  fake_cuda_reset(1, 4 * kGiB);  // room for a region above the handle cap
  auto vmm = Create(4 * kGiB);
  const uint64_t granule = vmm->granularity();
  const uint64_t large =
      (CudaVmmSubAllocator::kMaxGranuleHandles + 1) * granule;
  size_t received = 0;
  char* region = static_cast<char*>(vmm->Alloc(large, 256, &received));
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(vmm->handle_count(), 1u);
  EXPECT_FALSE(vmm->Decommit(region + granule, granule));
  EXPECT_EQ(vmm->mapped_bytes(), large);
  vmm->Free(region, received);
}

TEST_F(CudaVmmTest, FailedRecommitLeavesTheRangeDecommitted) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  auto vmm = Create(64 * kMiB);
  const uint64_t granule = vmm->granularity();
  size_t received = 0;
  char* region = static_cast<char*>(vmm->Alloc(4 * granule, 256, &received));
  ASSERT_TRUE(vmm->Decommit(region, 3 * granule));
  for (const char* failing : {"cuMemCreate", "cuMemMap", "cuMemSetAccess"}) {
    SCOPED_TRACE(failing);
    // The second granule's call fails (the access call comes once, at the
    // end): the first granule is undone with it.
    fake_cuda_fail_call(failing,
                        std::string(failing) == "cuMemSetAccess" ? 1 : 2,
                        CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_FALSE(vmm->Recommit(region, 3 * granule));
    EXPECT_THAT(std::string(vmm->last_error().message()), HasSubstr(failing));
    EXPECT_EQ(vmm->mapped_bytes(), granule);
    EXPECT_EQ(fake_cuda_device_used(0), granule);
  }
  EXPECT_TRUE(vmm->Recommit(region, 3 * granule));
  vmm->Free(region, received);
}

// A granule the driver would not unmap is still mapped: its range is never
// treated as free (a decommit fails whole, a freed region's addresses are not
// handed out again).
TEST_F(CudaVmmTest, AFailedUnmapNeverMakesTheRangeFree) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  auto vmm = Create(64 * kMiB);
  const uint64_t granule = vmm->granularity();
  size_t received = 0;
  char* region = static_cast<char*>(vmm->Alloc(4 * granule, 256, &received));
  fake_cuda_fail_call("cuMemUnmap", 2, CUDA_ERROR_UNKNOWN);
  EXPECT_FALSE(vmm->Decommit(region, 3 * granule));
  EXPECT_EQ(vmm->mapped_bytes(), 4 * granule);  // the whole range, as before
  EXPECT_EQ(vmm->failed_frees(), 1);
  std::memset(region, 1, 4 * granule);  // every granule is mapped again
  ASSERT_TRUE(vmm->Decommit(region, 3 * granule));
  ASSERT_TRUE(vmm->Recommit(region, 3 * granule));

  fake_cuda_fail_call("cuMemUnmap", 1, CUDA_ERROR_UNKNOWN);
  vmm->Free(region, received);
  EXPECT_EQ(vmm->failed_frees(), 2);
  EXPECT_EQ(vmm->mapped_bytes(), granule);  // the granule that stayed mapped
  size_t again = 0;
  char* next = static_cast<char*>(vmm->Alloc(4 * granule, 256, &again));
  ASSERT_NE(next, nullptr);
  EXPECT_TRUE(next >= region + 4 * granule || next + 4 * granule <= region);
  vmm->Free(next, again);
  fake_cuda_reset(2, kDeviceMemory);  // the stuck granule, as a driver would
}

}  // namespace
}  // namespace tensormem
