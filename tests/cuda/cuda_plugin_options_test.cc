// The CUDA plug-in's options (the allocator specification) and one plug-in
// instance per test, built through them, on the fake driver.
#include <map>
#include <string>
#include <vector>

#include "cuda/cuda_test_env.h"
#include "gmock/gmock.h"
#include "tensormem/alloc/policy_registry.h"
#include "torch/cuda_plugin.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<PluginOptions> Options(
    std::map<std::string, std::string> environment, std::string_view json) {
  return CudaPluginOptions(
      [&](const char* name) -> const char* {
        auto found = environment.find(name);
        return found == environment.end() ? nullptr : found->second.c_str();
      },
      json);
}

TEST(CudaPluginOptionsTest, DefaultsToCudaVmmAndTakesTheSpecification) {
  absl::StatusOr<PluginOptions> options = Options({}, "");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->allocator.sub_allocator, "cuda-vmm");
  options = Options({{"TENSORMEM_POLICY", "pytorch"}},
                    R"({"sub_allocator": "cuda", "gc": true,
                        "memory_limit": "1GiB", "trace_path": "t.trace"})");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->allocator.policy, "pytorch");
  EXPECT_EQ(options->allocator.sub_allocator, "cuda");
  EXPECT_TRUE(options->allocator.garbage_collection);
  EXPECT_EQ(options->allocator.memory_limit, kGiB);
  EXPECT_EQ(options->trace_path, "t.trace");
}

TEST(CudaPluginOptionsTest, RefusesHostSubAllocatorsAndUnknownKeys) {
  EXPECT_THAT(std::string(Options({{"TENSORMEM_SUB_ALLOCATOR", "host"}}, "")
                              .status()
                              .message()),
              HasSubstr("the CUDA plug-in uses cuda, cuda-vmm or cuda-async"));
  EXPECT_FALSE(Options({}, R"({"colour": "blue"})").ok());
}

using CudaPluginTest = CudaTest;

TEST_F(CudaPluginTest, EveryPolicyServesDeviceMemory) {
  for (const PolicyInfo& policy : Policies()) {
    SCOPED_TRACE(policy.name);
    absl::StatusOr<PluginOptions> options =
        Options({{"TENSORMEM_POLICY", std::string(policy.name)}},
                R"({"memory_limit": "256MiB"})");
    ASSERT_TRUE(options.ok()) << options.status();
    auto plugin = CudaPlugin::Create(*options, driver_);
    ASSERT_TRUE(plugin.ok()) << plugin.status();
    void* block = (*plugin)->Malloc(3 * kMiB, 0, nullptr);
    ASSERT_NE(block, nullptr) << (*plugin)->LastError();
    EXPECT_EQ((*plugin)->Malloc(300 * kMiB, 0, nullptr), nullptr);
    EXPECT_THAT((*plugin)->LastError(), HasSubstr("out of memory"));
    EXPECT_TRUE((*plugin)->Free(block, 3 * kMiB, 0, nullptr));
    EXPECT_EQ((*plugin)->StatsJson()["devices"]["0"]["bytes_in_use"], 0);
  }
}

// The planned policy's allocator wraps a BFC allocator: the plug-in serves
// from the whole of it (its arena blocks included) and reports its stats.
// With marks (tensormem_torch.cuda_mark_iteration), the steps between them are
// the loop.
class PlannedPluginTest : public CudaTest,
                          public ::testing::WithParamInterface<bool> {};

TEST_P(PlannedPluginTest, ServesALoopFromItsPlan) {
  const bool marked = GetParam();
  absl::StatusOr<PluginOptions> options =
      Options({{"TENSORMEM_POLICY", "planned"}},
              R"({"memory_limit": "256MiB", "config": "planning:inline"})");
  ASSERT_TRUE(options.ok()) << options.status();
  auto plugin = CudaPlugin::Create(*options, driver_);
  ASSERT_TRUE(plugin.ok()) << plugin.status();
  const size_t sizes[] = {3 * kMiB, 1 * kMiB, 5 * kMiB, 2 * kMiB};
  for (int step = 0; step < 12; ++step) {
    if (marked) (*plugin)->MarkIteration();
    std::vector<void*> blocks;
    for (size_t bytes : sizes) {
      blocks.push_back((*plugin)->Malloc(bytes, 0, nullptr));
      ASSERT_NE(blocks.back(), nullptr) << (*plugin)->LastError();
    }
    for (size_t i = 0; i < blocks.size(); ++i)
      ASSERT_TRUE((*plugin)->Free(blocks[i], sizes[i], 0, nullptr));
  }
  const nlohmann::json stats = (*plugin)->StatsJson()["devices"]["0"];
  EXPECT_GT(stats.value("planned_iterations", 0), 0) << stats.dump();
  EXPECT_TRUE(stats.contains("steady_peak_pool_bytes")) << stats.dump();
  EXPECT_EQ(stats["bytes_in_use"], 0);
}

INSTANTIATE_TEST_SUITE_P(FoundOrMarked, PlannedPluginTest, ::testing::Bool());

}  // namespace
}  // namespace tensormem
