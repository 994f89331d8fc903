// Stream-ordered reuse: same stream at once, other streams after a GPU-side
// wait on the event recorded at the free; never a host synchronisation.
#include "tensormem/cuda/stream_ordered_allocator.h"

#include <string>

#include "cuda/cuda_test_env.h"
#include "gmock/gmock.h"
#include "tensormem/cuda/cuda_vmm_sub_allocator.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class StreamOrderedTest : public CudaTest {
 protected:
  void SetUp() override {
    CudaTest::SetUp();
    if (driver_ == nullptr) return;
    ASSERT_TRUE(driver_->MakeCurrent(0).ok());
    ASSERT_EQ(driver_->api().cuStreamCreate(&first_, 0), CUDA_SUCCESS);
    ASSERT_EQ(driver_->api().cuStreamCreate(&second_, 0), CUDA_SUCCESS);
    CudaSubAllocatorParams params;
    params.reserve_bytes = 256 * kMiB;
    auto vmm = CudaVmmSubAllocator::Create(params);
    ASSERT_TRUE(vmm.ok()) << vmm.status();
    auto bfc = std::make_unique<BfcAllocator>(*std::move(vmm), 128 * kMiB);
    BfcAllocator* engine = bfc.get();
    allocator_ = std::make_unique<StreamOrderedAllocator>(std::move(bfc),
                                                          engine, driver_, 0);
    if (OnFakeDriver()) fake_cuda_clear_call_log();
  }
  void TearDown() override {
    allocator_.reset();
    if (driver_ != nullptr) {
      driver_->MakeCurrent(0).IgnoreError();
      driver_->api().cuStreamDestroy(first_);
      driver_->api().cuStreamDestroy(second_);
    }
    CudaTest::TearDown();
  }

  CUstream first_ = nullptr;
  CUstream second_ = nullptr;
  std::unique_ptr<StreamOrderedAllocator> allocator_;
};

TEST_F(StreamOrderedTest, SameStreamReusesAtOnceWithoutWaiting) {
  void* a = allocator_->Allocate(kMiB, first_);
  ASSERT_TRUE(allocator_->Free(a, first_).ok());
  void* b = allocator_->Allocate(kMiB, first_);
  EXPECT_EQ(b, a);
  EXPECT_EQ(allocator_->cross_stream_waits(), 0);
  EXPECT_EQ(allocator_->events_recorded(), 1);
  ASSERT_TRUE(allocator_->Free(b, first_).ok());
}

TEST_F(StreamOrderedTest, OtherStreamWaitsOnTheEventRecordedAtTheFree) {
  void* a = allocator_->Allocate(kMiB, first_);
  ASSERT_TRUE(allocator_->Free(a, first_).ok());
  void* b = allocator_->Allocate(kMiB, second_);
  EXPECT_EQ(b, a);                                 // the same memory...
  EXPECT_EQ(allocator_->cross_stream_waits(), 1);  // ...after a GPU wait
  // Once `second` freed it, `second` reuses it freely, `first` must wait.
  ASSERT_TRUE(allocator_->Free(b, second_).ok());
  void* c = allocator_->Allocate(kMiB, second_);
  EXPECT_EQ(allocator_->cross_stream_waits(), 1);
  ASSERT_TRUE(allocator_->Free(c, second_).ok());
  void* d = allocator_->Allocate(512 * kKiB, first_);  // a part is enough
  EXPECT_EQ(d, a);
  EXPECT_EQ(allocator_->cross_stream_waits(), 2);
  ASSERT_TRUE(allocator_->Free(d, first_).ok());
  if (OnFakeDriver()) {
    const std::string log = fake_cuda_call_log();
    EXPECT_THAT(
        log, HasSubstr("cuStreamWaitEvent stream=" +
                       std::to_string(reinterpret_cast<uintptr_t>(second_))));
    EXPECT_LT(log.find("cuEventRecord"), log.find("cuStreamWaitEvent"));
    // GPU-side waits only: the host never blocks.
    EXPECT_THAT(log, Not(HasSubstr("Synchronize")));
  }
}

// The proof with work queued: the second stream's kernel on reused memory
// is ordered after the first stream's.
TEST_F(StreamOrderedTest, ReuseOnAnotherStreamIsOrderedAfterQueuedWork) {
  TENSORMEM_FAKE_DRIVER_ONLY();
  void* a = allocator_->Allocate(kMiB, first_);
  fake_cuda_launch(first_, reinterpret_cast<CUdeviceptr>(a), kMiB);
  ASSERT_TRUE(allocator_->Free(a, first_).ok());
  void* b = allocator_->Allocate(kMiB, second_);
  ASSERT_EQ(b, a);
  fake_cuda_launch(second_, reinterpret_cast<CUdeviceptr>(b), kMiB);
  EXPECT_STREQ(fake_cuda_violations(),
               "");  // (FakeDriverTest: a race is caught)
  ASSERT_TRUE(allocator_->Free(b, second_).ok());
}

TEST_F(StreamOrderedTest, WaitsOnlyForOverlappingFrees) {
  void* a = allocator_->Allocate(kMiB, first_);
  void* b = allocator_->Allocate(kMiB, first_);
  ASSERT_TRUE(allocator_->Free(a, first_).ok());
  // `b` is still live: a block elsewhere needs no wait.
  void* c = allocator_->Allocate(4 * kMiB, second_);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c, a);
  EXPECT_EQ(allocator_->cross_stream_waits(), 0);
  ASSERT_TRUE(allocator_->Free(b, first_).ok());
  ASSERT_TRUE(allocator_->Free(c, second_).ok());
}

TEST_F(StreamOrderedTest, RejectsForeignPointersAndSurvivesDriverFailures) {
  int local = 0;
  absl::Status bad = allocator_->Free(&local, first_);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.message()), HasSubstr("not a live block"));
  TENSORMEM_FAKE_DRIVER_ONLY();
  void* a = allocator_->Allocate(kMiB, first_);
  fake_cuda_fail_call("cuStreamWaitEvent", 1, CUDA_ERROR_UNKNOWN);
  ASSERT_TRUE(allocator_->Free(a, first_).ok());
  EXPECT_EQ(allocator_->Allocate(kMiB, second_), nullptr);  // not unsafe memory
  EXPECT_THAT(std::string(allocator_->last_error().message()),
              HasSubstr("cuStreamWaitEvent: CUDA_ERROR_UNKNOWN"));
  void* retry = allocator_->Allocate(kMiB, second_);
  EXPECT_EQ(retry, a);
  ASSERT_TRUE(allocator_->Free(retry, second_).ok());
}

}  // namespace
}  // namespace tensormem
