// The BFC allocator on cuda-vmm: the pool grows as one contiguous region,
// shrinks from its end on garbage collection, gives holes back under the
// `tight` policy, and leaves no handle behind.
#include <cstring>
#include <string>
#include <vector>

#include "cuda/cuda_test_env.h"
#include "gmock/gmock.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/cuda/cuda_vmm_sub_allocator.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

class BfcOnCudaVmmTest : public CudaTest {
 protected:
  std::unique_ptr<BfcAllocator> MakeBfc(uint64_t limit, bool gc) {
    CudaSubAllocatorParams params;
    auto vmm = CudaVmmSubAllocator::Create(params);
    EXPECT_TRUE(vmm.ok()) << vmm.status();
    if (!vmm.ok()) return nullptr;
    vmm_ = vmm->get();
    BfcAllocator::Options options;
    options.garbage_collection = gc;
    options.allow_retry_on_failure = false;
    options.log_failures = false;
    return std::make_unique<BfcAllocator>(*std::move(vmm), limit, options);
  }
  // `tight` with growth over a 256 MiB cuda-vmm reservation (`config`: the
  // policy's; by default holes go back only under pressure on cuda-vmm).
  std::unique_ptr<BfcAllocator> MakeTightBfc(
      std::string_view config = "decommit:hold_peak") {
    CudaSubAllocatorParams params;
    params.reserve_bytes = 256 * kMiB;
    auto vmm = CudaVmmSubAllocator::Create(params);
    EXPECT_TRUE(vmm.ok()) << vmm.status();
    if (!vmm.ok()) return nullptr;
    vmm_ = vmm->get();
    PolicyEnvironment environment;
    environment.memory_limit = 256 * kMiB;
    environment.allow_growth = true;
    environment.upstream_coalesces = true;
    auto policy = CreatePolicy("tight", environment, config);
    EXPECT_TRUE(policy.ok()) << policy.status();
    if (!policy.ok()) return nullptr;
    BfcAllocator::Options options;
    options.log_failures = false;
    return std::make_unique<BfcAllocator>(*std::move(vmm), 256 * kMiB, options,
                                          *std::move(policy));
  }

  CudaVmmSubAllocator* vmm_ = nullptr;
};

TEST_F(BfcOnCudaVmmTest, GrowthStaysOneContiguousRegion) {
  auto bfc = MakeBfc(512 * kMiB, /*gc=*/false);
  ASSERT_NE(bfc, nullptr);
  std::vector<void*> blocks;
  for (uint64_t bytes : {kMiB, 3 * kMiB, 6 * kMiB, 12 * kMiB, 30 * kMiB}) {
    blocks.push_back(bfc->AllocateRaw(256, bytes));
    ASSERT_NE(blocks.back(), nullptr);
  }
  EXPECT_GT(vmm_->region_count(), 1u);  // grown several times...
  EXPECT_EQ(bfc->RecordMemoryDump().regions.size(), 1u);  // ...as one region
  EXPECT_EQ(bfc->GetStats()->pool_bytes, vmm_->mapped_bytes());
  ASSERT_TRUE(bfc->CheckInvariants().ok());
  // Freeing everything merges into one chunk across handle boundaries.
  for (void* block : blocks) bfc->Deallocate(block);
  void* big = bfc->AllocateRaw(256, vmm_->mapped_bytes() - 256);
  EXPECT_EQ(big, vmm_->BaseAddress());
  bfc->Deallocate(big);
}

TEST_F(BfcOnCudaVmmTest, GarbageCollectionShrinksFromTheEnd) {
  auto bfc = MakeBfc(512 * kMiB, /*gc=*/true);
  ASSERT_NE(bfc, nullptr);
  void* low = bfc->AllocateRaw(256, kMiB);
  std::vector<void*> high;
  for (uint64_t bytes : {4 * kMiB, 8 * kMiB, 16 * kMiB}) {
    high.push_back(bfc->AllocateRaw(256, bytes));
  }
  const uint64_t grown = vmm_->mapped_bytes();
  const size_t regions = vmm_->region_count();
  for (void* block : high) bfc->Deallocate(block);
  // `low` keeps the first piece; every piece after it is free.
  ASSERT_TRUE(bfc->ReleaseFreeRegions());
  EXPECT_LT(vmm_->mapped_bytes(), grown);
  EXPECT_EQ(vmm_->region_count(), 1u);
  EXPECT_LT(vmm_->region_count(), regions);
  EXPECT_EQ(bfc->GetStats()->pool_bytes, vmm_->mapped_bytes());
  if (OnFakeDriver()) {
    EXPECT_EQ(fake_cuda_device_used(0), vmm_->mapped_bytes());
  }
  ASSERT_TRUE(bfc->CheckInvariants().ok());
  EXPECT_FALSE(bfc->ReleaseFreeRegions());  // nothing left to give back
  // It grows again, contiguously, when asked.
  void* again = bfc->AllocateRaw(256, 8 * kMiB);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(bfc->RecordMemoryDump().regions.size(), 1u);
  bfc->Deallocate(again);
  bfc->Deallocate(low);
}

TEST_F(BfcOnCudaVmmTest, GarbageCollectionOnFailureFreesTheTail) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  // Limit = the device (1 GiB). Pieces of 64, 128 and 256 MiB; with the last
  // two free, 700 MiB fits neither the free chunk (384 MiB) nor the headroom
  // (576 MiB): only once the free tail has gone back to the driver.
  auto bfc = MakeBfc(kDeviceMemory, /*gc=*/true);
  ASSERT_NE(bfc, nullptr);
  void* keep = bfc->AllocateRaw(256, 64 * kMiB);
  void* a = bfc->AllocateRaw(256, 100 * kMiB);
  void* b = bfc->AllocateRaw(256, 200 * kMiB);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(vmm_->region_count(), 3u);
  bfc->Deallocate(a);
  bfc->Deallocate(b);
  void* big = bfc->AllocateRaw(256, 700 * kMiB);
  ASSERT_NE(big, nullptr) << bfc->LastFailureReport();
  // The two free pieces went back: one handle per granule.
  EXPECT_EQ(fake_cuda_call_count("cuMemRelease"),
            static_cast<int>((128 + 256) * kMiB / vmm_->granularity()));
  EXPECT_EQ(big, static_cast<char*>(keep) + 64 * kMiB);  // still contiguous
  EXPECT_EQ(bfc->RecordMemoryDump().regions.size(), 1u);
  ASSERT_TRUE(bfc->CheckInvariants().ok());
  bfc->Deallocate(big);
  bfc->Deallocate(keep);
}

// The `tight` policy gives a hole back to the device before the pool grows,
// as over the simulated upstream (tests/alloc/bfc_decommit_test.cc).
TEST_F(BfcOnCudaVmmTest, TightPolicyGivesHolesBackToTheDevice) {
  std::unique_ptr<BfcAllocator> tight = MakeTightBfc();
  ASSERT_NE(tight, nullptr);
  BfcAllocator& bfc = *tight;

  // 4 MiB then 2 MiB, the 4 MiB freed: a 6 MiB request finds a 4 MiB hole.
  void* first = bfc.Allocate(4 * kMiB);
  void* second = bfc.Allocate(2 * kMiB);
  bfc.Deallocate(first);
  char* third = static_cast<char*>(bfc.Allocate(6 * kMiB));
  ASSERT_NE(third, nullptr);
  // The hole's two granules went back to the driver: 2 + 6 MiB mapped where
  // keeping the hole would have made 12 MiB.
  EXPECT_EQ(bfc.GetStats()->peak_pool_bytes, 8 * kMiB);
  EXPECT_EQ(vmm_->mapped_bytes(), 8 * kMiB);
  EXPECT_EQ(bfc.GetStats()->pool_bytes, vmm_->mapped_bytes());
  if (OnFakeDriver()) {
    EXPECT_EQ(fake_cuda_device_used(0), 8 * kMiB);
    std::memset(third, 6, 6 * kMiB);  // what the pool holds is mapped
  }
  ASSERT_TRUE(bfc.CheckInvariants().ok()) << bfc.CheckInvariants();

  // A 4 MiB request is served from the decommitted hole, at its old
  // addresses, by backing it again instead of extending the region.
  char* fourth = static_cast<char*>(bfc.Allocate(4 * kMiB));
  EXPECT_EQ(fourth, first);
  EXPECT_EQ(vmm_->mapped_bytes(), 12 * kMiB);
  if (OnFakeDriver()) std::memset(fourth, 4, 4 * kMiB);
  ASSERT_TRUE(bfc.CheckInvariants().ok()) << bfc.CheckInvariants();
  EXPECT_EQ(vmm_->failed_frees(), 0);
  bfc.Deallocate(fourth);
  bfc.Deallocate(third);
  bfc.Deallocate(second);
}

// On cuda-vmm a decommit drains the device (measured on an H200: holding the
// peak made ResNet-50 steps 1.5x PyTorch's), so by default the hole stays
// while memory lasts.
TEST_F(BfcOnCudaVmmTest, TightKeepsHolesByDefaultWhileMemoryLasts) {
  std::unique_ptr<BfcAllocator> tight = MakeTightBfc(/*config=*/"");
  ASSERT_NE(tight, nullptr);
  BfcAllocator& bfc = *tight;
  void* first = bfc.Allocate(4 * kMiB);
  void* second = bfc.Allocate(2 * kMiB);
  bfc.Deallocate(first);
  const int synchronisations =
      OnFakeDriver() ? fake_cuda_call_count("cuCtxSynchronize") : 0;
  void* third = bfc.Allocate(6 * kMiB);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(vmm_->mapped_bytes(), 12 * kMiB);  // the hole kept
  if (OnFakeDriver()) {
    EXPECT_EQ(fake_cuda_call_count("cuCtxSynchronize"), synchronisations);
  }
  EXPECT_TRUE(bfc.CheckInvariants().ok());
  bfc.Deallocate(third);
  bfc.Deallocate(second);
}

// A freed block's kernels may still be queued when tight gives its granules
// back: the device drains before they are unmapped (a real GPU would fault).
TEST_F(BfcOnCudaVmmTest, TightPolicyUnmapsHolesOnlyAfterQueuedWork) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  std::unique_ptr<BfcAllocator> tight = MakeTightBfc();
  ASSERT_NE(tight, nullptr);
  BfcAllocator& bfc = *tight;
  void* activation = bfc.Allocate(4 * kMiB);
  void* kept = bfc.Allocate(2 * kMiB);
  // A kernel reading the activation is queued; the host frees it at once.
  fake_cuda_launch(nullptr, reinterpret_cast<CUdeviceptr>(activation),
                   4 * kMiB);
  bfc.Deallocate(activation);
  const int synchronisations = fake_cuda_call_count("cuCtxSynchronize");
  ASSERT_NE(bfc.Allocate(6 * kMiB), nullptr);  // the hole goes back first
  EXPECT_EQ(vmm_->mapped_bytes(), 8 * kMiB);
  EXPECT_EQ(fake_cuda_call_count("cuCtxSynchronize"), synchronisations + 1);
  EXPECT_STREQ(fake_cuda_violations(), "");
  bfc.Deallocate(kept);
}

TEST_F(BfcOnCudaVmmTest, OutOfDeviceMemoryIsExplained) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  auto bfc = MakeBfc(4 * kDeviceMemory, /*gc=*/false);  // limit > device
  void* most = bfc->AllocateRaw(256, kDeviceMemory - 64 * kMiB);
  ASSERT_NE(most, nullptr);
  EXPECT_EQ(bfc->AllocateRaw(256, 128 * kMiB), nullptr);
  EXPECT_THAT(vmm_->last_error().message(),
              HasSubstr("CUDA_ERROR_OUT_OF_MEMORY"));
  EXPECT_FALSE(bfc->LastFailureReport().empty());
  bfc->Deallocate(most);
}

TEST_F(BfcOnCudaVmmTest, DestructionLeavesNoHandle) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  {
    auto bfc = MakeBfc(256 * kMiB, /*gc=*/false);
    for (int i = 0; i < 6; ++i) bfc->AllocateRaw(256, (i + 1) * kMiB);
    EXPECT_GT(fake_cuda_device_used(0), 0u);
  }  // blocks still live: the allocator returns its whole pool
  EXPECT_EQ(fake_cuda_device_used(0), 0u);
  EXPECT_EQ(fake_cuda_call_count("cuMemCreate"),
            fake_cuda_call_count("cuMemRelease"));
}

}  // namespace
}  // namespace tensormem
