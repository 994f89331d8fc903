// Where the CUDA tests run: on the fake driver (ctest points
// TENSORMEM_CUDA_DRIVER at it) or on a real GPU (tools/gpu-check.sh runs the
// same binaries with the variable unset). Checks only the fake can make (call
// log, fault injection, leak counts) are skipped on a real driver.
#ifndef TENSORMEM_TESTS_CUDA_CUDA_TEST_ENV_H_
#define TENSORMEM_TESTS_CUDA_CUDA_TEST_ENV_H_

#include <cstdlib>
#include <cstring>

#include "cuda/fake_cuda_control.h"
#include "gtest/gtest.h"
#include "tensormem/core/units.h"
#include "tensormem/cuda/driver.h"

namespace tensormem {

inline bool OnFakeDriver() {
  const char* path = std::getenv("TENSORMEM_CUDA_DRIVER");
  return path != nullptr && std::strstr(path, "fake_cuda") != nullptr;
}

// Each test starts from a fresh fake: 2 devices of 1 GiB; and ends with
// everything given back.
class CudaTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kDeviceMemory = kGiB;

  void SetUp() override {
    if (OnFakeDriver()) fake_cuda_reset(2, kDeviceMemory);
    absl::StatusOr<CudaDriver*> driver = CudaDriver::Get();
    // The GPU bundle's check sets TENSORMEM_CUDA_TESTS_NEED_DRIVER: there a
    // missing driver fails instead of passing as skipped.
    if (!driver.ok() && std::getenv("TENSORMEM_CUDA_TESTS_NEED_DRIVER")) {
      FAIL() << driver.status();
    }
    if (!driver.ok()) GTEST_SKIP() << driver.status();
    driver_ = *driver;
  }
  void TearDown() override {
    if (OnFakeDriver() && driver_ != nullptr) {
      EXPECT_EQ(fake_cuda_live_objects(), 0) << fake_cuda_leak_report();
      EXPECT_STREQ(fake_cuda_violations(), "");
    }
  }

  CudaDriver* driver_ = nullptr;
};

#define TENSORMEM_FAKE_DRIVER_ONLY() \
  if (!OnFakeDriver()) GTEST_SKIP() << "needs the fake driver's controls"

}  // namespace tensormem

#endif  // TENSORMEM_TESTS_CUDA_CUDA_TEST_ENV_H_
