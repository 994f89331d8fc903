// TensorFlow's GPU options and environment, rule by rule.
#include "tensormem/cuda/gpu_bfc_options.h"

#include <map>
#include <string>

#include "cuda/cuda_test_env.h"
#include "gmock/gmock.h"

namespace tensormem {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<GpuBfcOptions> WithEnvironment(
    std::map<std::string, std::string> variables, GpuBfcOptions base = {}) {
  return ApplyTensorFlowEnvironment(base, [&](const char* name) -> const char* {
    auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  });
}

TEST(GpuBfcOptionsTest, DefaultsAreTensorFlows) {
  absl::StatusOr<GpuBfcOptions> options = WithEnvironment({});
  ASSERT_TRUE(options.ok());
  EXPECT_FALSE(options->allow_growth);
  EXPECT_TRUE(options->garbage_collection);
  EXPECT_EQ(options->sub_allocator, "cuda-vmm");
  EXPECT_EQ(options->host_memory_limit, 64 * kGiB);
  EXPECT_TRUE(options->warnings.empty());
}

TEST(GpuBfcOptionsTest, ForceAllowGrowthAcceptsExactlyTrueOrFalse) {
  EXPECT_TRUE(
      WithEnvironment({{"TF_FORCE_GPU_ALLOW_GROWTH", "true"}})->allow_growth);
  GpuBfcOptions growing;
  growing.allow_growth = true;
  EXPECT_FALSE(
      WithEnvironment({{"TF_FORCE_GPU_ALLOW_GROWTH", "false"}}, growing)
          ->allow_growth);
  for (const char* odd : {"True", "1", "yes", ""}) {
    SCOPED_TRACE(odd);
    absl::StatusOr<GpuBfcOptions> options =
        WithEnvironment({{"TF_FORCE_GPU_ALLOW_GROWTH", odd}}, growing);
    ASSERT_TRUE(options.ok());
    EXPECT_TRUE(options->allow_growth);  // the configured value stays
    ASSERT_EQ(options->warnings.size(), 1u);
    EXPECT_THAT(options->warnings[0],
                HasSubstr("is neither \"true\" nor \"false\": ignored"));
  }
}

TEST(GpuBfcOptionsTest, GarbageCollectionVariable) {
  EXPECT_FALSE(WithEnvironment({{"TF_ENABLE_GPU_GARBAGE_COLLECTION", "false"}})
                   ->garbage_collection);
  EXPECT_FALSE(WithEnvironment({{"TF_ENABLE_GPU_GARBAGE_COLLECTION", "0"}})
                   ->garbage_collection);
  EXPECT_TRUE(WithEnvironment({{"TF_ENABLE_GPU_GARBAGE_COLLECTION", "TRUE"}})
                  ->garbage_collection);
  absl::StatusOr<GpuBfcOptions> bad =
      WithEnvironment({{"TF_ENABLE_GPU_GARBAGE_COLLECTION", "maybe"}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("TF_ENABLE_GPU_GARBAGE_COLLECTION=maybe"));
}

TEST(GpuBfcOptionsTest, AllocatorAndLimitsFromTheEnvironment) {
  absl::StatusOr<GpuBfcOptions> options =
      WithEnvironment({{"TF_GPU_ALLOCATOR", "cuda_malloc_async"},
                       {"TF_GPU_HOST_MEM_LIMIT_IN_MB", "2048"},
                       {"TF_DEVICE_MIN_SYS_MEMORY_IN_MB", "100"}});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->sub_allocator, "cuda-async");
  EXPECT_EQ(options->host_memory_limit, 2 * kGiB);
  EXPECT_EQ(options->min_system_memory, 100 * kMiB);
  EXPECT_THAT(WithEnvironment({{"TF_GPU_ALLOCATOR", "bfc"}})->warnings,
              ElementsAre(HasSubstr("TF_GPU_ALLOCATOR=bfc")));
  EXPECT_THAT(
      std::string(WithEnvironment({{"TF_GPU_HOST_MEM_LIMIT_IN_MB", "lots"}})
                      .status()
                      .message()),
      HasSubstr("TF_GPU_HOST_MEM_LIMIT_IN_MB=lots"));
}

TEST(GpuBfcOptionsTest, MemoryLimitRules) {
  const GpuDeviceFacts device{16 * kGiB, 15 * kGiB, 8};
  GpuBfcOptions options;
  // Free memory minus the reserve for the compute capability.
  EXPECT_EQ(*DeviceMemoryLimit(options, device), 15 * kGiB - 1536 * kMiB);
  EXPECT_EQ(MinSystemMemory(15 * kGiB, 7), 1050 * kMiB);
  EXPECT_EQ(MinSystemMemory(15 * kGiB, 6), 500 * kMiB);
  EXPECT_EQ(MinSystemMemory(kGiB, 8), 225 * kMiB);
  options.min_system_memory = 100 * kMiB;
  EXPECT_EQ(*DeviceMemoryLimit(options, device), 15 * kGiB - 100 * kMiB);
  // The fraction is of the total, not of what is free.
  options.per_process_gpu_memory_fraction = 0.5;
  EXPECT_EQ(*DeviceMemoryLimit(options, device), 8 * kGiB);
  options.memory_limit_bytes = 3 * kGiB;  // a virtual device's limit wins
  EXPECT_EQ(*DeviceMemoryLimit(options, device), 3 * kGiB);
  options.memory_limit_bytes = 0;
  options.per_process_gpu_memory_fraction = 1.5;
  EXPECT_THAT(
      std::string(DeviceMemoryLimit(options, device).status().message()),
      HasSubstr("unified memory"));
  options.per_process_gpu_memory_fraction = 0;
  options.min_system_memory = 0;
  EXPECT_EQ(DeviceMemoryLimit(options, {kGiB, 200 * kMiB, 8}).status().code(),
            absl::StatusCode::kResourceExhausted);
}

using GpuAllocatorsTest = CudaTest;

TEST_F(GpuAllocatorsTest, OneAllocatorPerDevicePlusPinnedHost) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  GpuBfcOptions options;
  options.per_process_gpu_memory_fraction = 0.25;
  options.host_memory_limit = 64 * kMiB;
  {
    absl::StatusOr<GpuAllocators> allocators =
        CreateGpuAllocators(options, driver_);
    ASSERT_TRUE(allocators.ok()) << allocators.status();
    ASSERT_EQ(allocators->device_allocators.size(), 2u);
    EXPECT_EQ(allocators->device_allocators[1]->Name(), "GPU_1_bfc");
    EXPECT_EQ(allocators->device_allocators[0]->memory_limit(), 256 * kMiB);
    // Without growth the whole limit is taken at the first allocation.
    void* block = allocators->device_allocators[1]->AllocateRaw(256, kMiB);
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(fake_cuda_device_used(1), 256 * kMiB);
    EXPECT_EQ(fake_cuda_device_used(0), 0u);
    allocators->device_allocators[1]->Deallocate(block);
    void* pinned = allocators->pinned_host->AllocateRaw(256, 4 * kMiB);
    EXPECT_NE(pinned, nullptr);
    EXPECT_EQ(allocators->pinned_host->AllocateRaw(256, 100 * kMiB), nullptr);
    allocators->pinned_host->Deallocate(pinned);
  }
  EXPECT_EQ(fake_cuda_device_used(1), 0u);
}

TEST_F(GpuAllocatorsTest, CudaMallocAsyncSelectsTheStreamOrderedPool) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  absl::StatusOr<GpuBfcOptions> options =
      WithEnvironment({{"TF_GPU_ALLOCATOR", "cuda_malloc_async"},
                       {"TF_FORCE_GPU_ALLOW_GROWTH", "true"}});
  options->devices = {0};
  options->min_system_memory = 24 * kMiB;
  absl::StatusOr<GpuAllocators> allocators =
      CreateGpuAllocators(*options, driver_);
  ASSERT_TRUE(allocators.ok()) << allocators.status();
  EXPECT_EQ(allocators->device_allocators[0]->upstream().Name(), "cuda-async");
  EXPECT_EQ(allocators->device_allocators[0]->memory_limit(), 1000 * kMiB);
  void* block = allocators->device_allocators[0]->AllocateRaw(256, kMiB);
  EXPECT_NE(block, nullptr);
  EXPECT_GE(fake_cuda_call_count("cuMemAllocFromPoolAsync"), 1);
  allocators->device_allocators[0]->Deallocate(block);
}

}  // namespace
}  // namespace tensormem
