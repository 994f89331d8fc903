// libtensormem_cuda_torch.so through its exported C functions, loaded as
// PyTorch's CUDAPluggableAllocator loads it (dlopen + dlsym).
//
// Every test enables the plug-in with the same options first, so the tests
// also pass when run one after another in one process (only the first enable
// builds the allocators).
#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "cuda/cuda_test_env.h"
#include "gmock/gmock.h"
#include "nlohmann/json.hpp"
#include "tensormem/trace/trace_io.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

struct PluginLibrary {
  void* (*malloc)(size_t, int, void*);
  void* (*malloc_or_throw)(size_t, int, void*);
  void (*free)(void*, size_t, int, void*);
  int (*enable)(const char*);
  char* (*last_error)();
  char* (*stats_json)();
  int (*finish)();
  uint64_t (*empty_cache)();
  void (*free_string)(char*);
};

std::string TracePath() {
  return ::testing::TempDir() + "/tensormem_cuda_plugin_test.trace";
}

class CudaTorchPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The GPU bundle names its own copy; a build tree uses the one it built.
    const char* path = std::getenv("TENSORMEM_CUDA_TORCH_LIBRARY");
    if (path == nullptr) path = TENSORMEM_CUDA_TORCH_LIBRARY;
    void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library, nullptr) << dlerror();
    auto resolve = [&](const char* name) {
      void* symbol = dlsym(library, name);
      EXPECT_NE(symbol, nullptr) << name;
      return symbol;
    };
    // The two symbols CUDAPluggableAllocator asks for.
    plugin_.malloc = reinterpret_cast<decltype(plugin_.malloc)>(
        resolve("tensormem_cuda_malloc"));
    plugin_.malloc_or_throw =
        reinterpret_cast<decltype(plugin_.malloc_or_throw)>(
            resolve("tensormem_cuda_malloc_or_throw"));
    plugin_.free = reinterpret_cast<decltype(plugin_.free)>(
        resolve("tensormem_cuda_free"));
    plugin_.enable = reinterpret_cast<decltype(plugin_.enable)>(
        resolve("tensormem_cuda_enable"));
    plugin_.last_error = reinterpret_cast<decltype(plugin_.last_error)>(
        resolve("tensormem_cuda_last_error"));
    plugin_.stats_json = reinterpret_cast<decltype(plugin_.stats_json)>(
        resolve("tensormem_cuda_stats_json"));
    plugin_.finish = reinterpret_cast<decltype(plugin_.finish)>(
        resolve("tensormem_cuda_finish"));
    plugin_.free_string = reinterpret_cast<decltype(plugin_.free_string)>(
        resolve("tensormem_cuda_free_string"));
    plugin_.empty_cache = reinterpret_cast<decltype(plugin_.empty_cache)>(
        resolve("tensormem_cuda_empty_cache"));
    const std::string options = nlohmann::json{
        {"memory_limit", "512MiB"},
        {"sub_allocator", "cuda-vmm"},
        {"trace_path", TracePath()}}.dump();
    ASSERT_EQ(plugin_.enable(options.c_str()), 0) << LastError();
  }

  std::string LastError() {
    char* text = plugin_.last_error();
    std::string copy = text == nullptr ? "" : text;
    plugin_.free_string(text);
    return copy;
  }
  nlohmann::json Stats() {
    char* text = plugin_.stats_json();
    nlohmann::json stats = nlohmann::json::parse(text);
    plugin_.free_string(text);
    return stats;
  }
  // A stream of device 0, made through the driver as PyTorch would.
  CUstream NewStream() {
    CudaDriver* driver = *CudaDriver::Get();
    EXPECT_TRUE(driver->MakeCurrent(0).ok());
    CUstream stream = nullptr;
    EXPECT_EQ(driver->api().cuStreamCreate(&stream, 0), CUDA_SUCCESS);
    return stream;
  }

  // Device 1 when there is one (the fake has two), else device 0.
  int SecondDevice() {
    absl::StatusOr<int> count = (*CudaDriver::Get())->DeviceCount();
    return count.ok() && *count > 1 ? 1 : 0;
  }

  PluginLibrary plugin_{};
};

TEST_F(CudaTorchPluginTest, ServesEachDeviceFromItsOwnAllocator) {
  const int device = SecondDevice();
  const std::string key = std::to_string(device);
  void* first = plugin_.malloc(kMiB, 0, nullptr);
  void* second = plugin_.malloc(3 * kMiB, device, nullptr);
  ASSERT_NE(first, nullptr) << LastError();
  ASSERT_NE(second, nullptr) << LastError();
  if (OnFakeDriver()) static_cast<char*>(second)[3 * kMiB - 1] = 1;
  nlohmann::json stats = Stats();
  EXPECT_GE(stats["devices"]["0"]["bytes_in_use"].get<uint64_t>(), kMiB);
  EXPECT_GE(stats["devices"][key]["bytes_in_use"].get<uint64_t>(), 3 * kMiB);
  EXPECT_EQ(stats["devices"][key]["sub_allocator"], "cuda-vmm");
  EXPECT_EQ(stats["devices"]["0"]["bytes_limit"], 512 * kMiB);
  plugin_.free(first, kMiB, 0, nullptr);
  plugin_.free(second, 3 * kMiB, device, nullptr);
  EXPECT_EQ(Stats()["devices"][key]["bytes_in_use"], 0);
  EXPECT_EQ(plugin_.malloc(0, 0, nullptr), nullptr);  // nothing to serve
}

TEST_F(CudaTorchPluginTest, OutOfMemoryIsNullptrWithTheReason) {
  EXPECT_EQ(plugin_.malloc(700 * kMiB, 0, nullptr), nullptr);
  const std::string error = LastError();
  EXPECT_THAT(error, HasSubstr("out of memory on CUDA device 0 allocating "
                               "700 MiB on stream 0"));
  EXPECT_THAT(error, HasSubstr("512"));  // the allocator's own report
  EXPECT_GE(Stats()["devices"]["0"]["failed_allocs"].get<int>(), 1);
  void* small = plugin_.malloc(kMiB, 0, nullptr);  // still serving
  EXPECT_NE(small, nullptr);
  plugin_.free(small, kMiB, 0, nullptr);
}

// What PyTorch loads throws instead: PyTorch would build a tensor on null.
TEST_F(CudaTorchPluginTest, OutOfMemoryThrowsForPyTorchWithTheReason) {
  try {
    plugin_.malloc_or_throw(700 * kMiB, 0, nullptr);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("CUDA out of memory. tensormem: out of "
                                        "memory on CUDA device 0 allocating "
                                        "700 MiB"));
  }
  void* small = plugin_.malloc_or_throw(kMiB, 0, nullptr);  // still serving
  EXPECT_NE(small, nullptr);
  plugin_.free(small, kMiB, 0, nullptr);
  EXPECT_EQ(plugin_.malloc_or_throw(0, 0, nullptr), nullptr);  // no throw
}

// What torch.cuda.empty_cache cannot reach: free memory goes back to the
// driver, what is in use stays.
TEST_F(CudaTorchPluginTest, EmptyCacheGivesFreeMemoryBack) {
  void* kept = plugin_.malloc(kMiB, 0, nullptr);
  void* freed = plugin_.malloc(64 * kMiB, 0, nullptr);
  ASSERT_NE(freed, nullptr);
  plugin_.free(freed, 64 * kMiB, 0, nullptr);
  auto pool = [&] {  // every device's: earlier tests may have used another
    const nlohmann::json devices = Stats()["devices"];
    uint64_t bytes = 0;
    for (const nlohmann::json& stats : devices) {
      bytes += stats["pool_bytes"].get<uint64_t>();
    }
    return bytes;
  };
  const uint64_t before = pool();
  const uint64_t released = plugin_.empty_cache();
  EXPECT_GE(released, 64 * kMiB);
  EXPECT_EQ(pool(), before - released);
  EXPECT_EQ(Stats()["devices"]["0"]["bytes_in_use"].get<uint64_t>(), kMiB);
  plugin_.free(kept, kMiB, 0, nullptr);
}

TEST_F(CudaTorchPluginTest, ReuseOnAnotherStreamWaitsOnTheGpu) {
  CUstream first = NewStream();
  CUstream second = NewStream();
  void* a = plugin_.malloc(2 * kMiB, 0, first);
  ASSERT_NE(a, nullptr) << LastError();
  plugin_.free(a, 2 * kMiB, 0, first);
  const int64_t waits_before =
      Stats()["devices"]["0"]["cross_stream_waits"].get<int64_t>();
  void* b = plugin_.malloc(2 * kMiB, 0, second);
  EXPECT_EQ(b, a);
  EXPECT_EQ(Stats()["devices"]["0"]["cross_stream_waits"].get<int64_t>(),
            waits_before + 1);
  plugin_.free(b, 2 * kMiB, 0, second);
}

TEST_F(CudaTorchPluginTest, BadFreesAndDevicesAreReportedNotFatal) {
  int local = 0;
  plugin_.free(&local, 4, 0, nullptr);
  EXPECT_THAT(LastError(), HasSubstr("which tensormem did not allocate"));
  EXPECT_EQ(plugin_.malloc(kMiB, 9, nullptr), nullptr);
  EXPECT_THAT(LastError(), HasSubstr("CUDA device 9 does not exist"));
  // Other options after the first enable are refused, and say so.
  EXPECT_EQ(plugin_.enable(R"({"sub_allocator": "cuda"})"), -1);
  EXPECT_THAT(LastError(), HasSubstr("already set up with other options"));
}

TEST_F(CudaTorchPluginTest, TraceRecordsStreamAndDevicePerEvent) {
  const int device = SecondDevice();
  CUstream stream = NewStream();
  void* a = plugin_.malloc(kMiB, 0, stream);
  void* b = plugin_.malloc(kMiB, device, nullptr);
  plugin_.free(a, kMiB, 0, stream);
  plugin_.free(b, kMiB, device, nullptr);
  ASSERT_EQ(plugin_.finish(), 0);
  absl::StatusOr<Trace> trace = ReadTrace(TracePath());
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_GE(trace->events.size(), 4u);
  int on_stream = 0;
  for (const TraceEvent& event : trace->events) on_stream += event.stream > 0;
  EXPECT_GE(on_stream, 2);  // a's alloc and free
  ASSERT_FALSE(trace->extra_keys.empty());
  EXPECT_THAT(trace->extra_keys.back().second,
              HasSubstr("device=" + std::to_string(device)));
}

}  // namespace
}  // namespace tensormem
