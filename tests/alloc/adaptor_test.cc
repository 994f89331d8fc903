// Tests of the tracking and limiting adaptors over fake and real allocators.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/limiting_allocator.h"
#include "tensormem/alloc/system_allocator.h"
#include "tensormem/alloc/tracking_allocator.h"
#include "tensormem/core/checked_math.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

// malloc underneath; AllocatedSize is the request rounded up to `rounding`,
// or unknown when `rounding` is 0. Records the most bytes it held at once.
class FakeAllocator final : public Allocator {
 public:
  explicit FakeAllocator(size_t rounding) : rounding_(rounding) {}

  std::string Name() const override { return "fake"; }
  std::optional<size_t> AllocatedSize(const void* ptr) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(ptr);
    if (rounding_ == 0 || it == sizes_.end()) return std::nullopt;
    return RoundUp(it->second, rounding_);
  }
  uint64_t held_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_;
  }
  uint64_t peak_held_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_held_;
  }

 private:
  void* DoAllocate(size_t bytes, size_t /*alignment*/,
                   int32_t /*stream*/) override {
    if (bytes == 0 || bytes > kGiBForTests) return nullptr;
    void* ptr = std::malloc(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_[ptr] = bytes;
    held_ += Charge(bytes);
    peak_held_ = std::max(peak_held_, held_);
    return ptr;
  }
  absl::Status DoDeallocate(void* ptr) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = sizes_.find(ptr);
      if (it == sizes_.end())
        return absl::InvalidArgumentError("fake: unknown pointer");
      held_ -= Charge(it->second);
      sizes_.erase(it);
    }
    std::free(ptr);
    return absl::OkStatus();
  }
  size_t Charge(size_t bytes) const {
    return rounding_ == 0 ? bytes : RoundUp(bytes, rounding_);
  }

  static constexpr size_t kGiBForTests = size_t{1} << 30;
  const size_t rounding_;
  mutable std::mutex mutex_;
  absl::flat_hash_map<const void*, size_t> sizes_ ABSL_GUARDED_BY(mutex_);
  uint64_t held_ ABSL_GUARDED_BY(mutex_) = 0;
  uint64_t peak_held_ ABSL_GUARDED_BY(mutex_) = 0;
};

TEST(TrackingAllocatorTest, ChargesBytesWatermarkAndOutstanding) {
  FakeAllocator fake(/*rounding=*/256);
  std::shared_ptr<TrackingAllocator> tracker = TrackingAllocator::Create(fake);
  EXPECT_EQ(tracker->Name(), "tracking(fake)");
  void* a = tracker->Allocate(100);  // charged 256
  void* b = tracker->Allocate(300);  // charged 512
  EXPECT_EQ(tracker->RequestedSize(b), 300u);
  EXPECT_EQ(tracker->AllocatedSize(b), 512u);
  tracker->Deallocate(a);
  void* c = tracker->Allocate(50);  // charged 256
  const TrackingSummary summary = tracker->Summary();
  EXPECT_EQ(summary.total_bytes, 256u + 512u + 256u);
  EXPECT_EQ(summary.high_watermark, 768u);
  EXPECT_EQ(summary.outstanding_bytes, 768u);
  EXPECT_EQ(summary.outstanding_allocations, 2);
  EXPECT_EQ(summary.num_allocs, 3);
  EXPECT_EQ(summary.num_deallocs, 1);
  tracker->Deallocate(b);
  tracker->Deallocate(c);
  EXPECT_EQ(fake.held_bytes(), 0u);
}

TEST(TrackingAllocatorTest, ChargesRequestedBytesWhenTheWrappedOneDoesNotKnow) {
  FakeAllocator fake(/*rounding=*/0);
  std::shared_ptr<TrackingAllocator> tracker = TrackingAllocator::Create(fake);
  void* p = tracker->Allocate(100);
  EXPECT_EQ(tracker->Summary().total_bytes, 100u);
  EXPECT_EQ(tracker->AllocatedSize(p), 100u);
  tracker->Deallocate(p);
}

TEST(TrackingAllocatorTest, CountsLateFreesAndLivesUntilTheLastOne) {
  FakeAllocator fake(/*rounding=*/256);
  std::shared_ptr<TrackingAllocator> tracker = TrackingAllocator::Create(fake);
  void* output = tracker->Allocate(1000);
  void* other = tracker->Allocate(10);
  const TrackingSummary at_close = tracker->Close();
  EXPECT_EQ(at_close.outstanding_allocations, 2);
  EXPECT_TRUE(tracker->closed());
  EXPECT_EQ(tracker->Allocate(64), nullptr);  // the scope is over
  EXPECT_EQ(fake.held_bytes(), 1024u + 256u);

  std::weak_ptr<TrackingAllocator> observer = tracker;
  Allocator* raw = tracker.get();
  tracker.reset();  // the owner lets go; the blocks keep the tracker alive
  ASSERT_FALSE(observer.expired());
  raw->Deallocate(other);
  const TrackingSummary late = observer.lock()->Summary();
  EXPECT_EQ(late.deallocs_after_close, 1);
  EXPECT_EQ(late.outstanding_bytes, 1024u);
  EXPECT_FALSE(observer.expired());
  raw->Deallocate(output);  // the last block: the tracker goes with it
  EXPECT_TRUE(observer.expired());
  EXPECT_EQ(fake.held_bytes(), 0u);
}

TEST(TrackingAllocatorTest, AnOwnerAloneKeepsAnIdleTrackerAlive) {
  FakeAllocator fake(/*rounding=*/0);
  std::shared_ptr<TrackingAllocator> tracker = TrackingAllocator::Create(fake);
  std::weak_ptr<TrackingAllocator> observer = tracker;
  tracker->Deallocate(tracker->Allocate(8));
  EXPECT_FALSE(observer.expired());  // the owner still holds it
  tracker.reset();
  EXPECT_TRUE(observer.expired());  // nothing outstanding, no owner
}

TEST(TrackingAllocatorTest, MisuseChangesNothing) {
  FakeAllocator fake(/*rounding=*/0);
  std::shared_ptr<TrackingAllocator> tracker = TrackingAllocator::Create(fake);
  void* mine = tracker->Allocate(64);
  void* foreign = fake.Allocate(64);  // allocated around the tracker
  absl::Status status = tracker->CheckedDeallocate(foreign);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("tracking(fake)"));
  EXPECT_FALSE(tracker->CheckedDeallocate(static_cast<char*>(mine) + 1).ok());
  EXPECT_EQ(tracker->Summary().outstanding_allocations, 1);
  EXPECT_EQ(fake.held_bytes(), 128u);
  EXPECT_TRUE(tracker->CheckedDeallocate(mine).ok());
  EXPECT_FALSE(tracker->CheckedDeallocate(mine).ok());  // double free
  EXPECT_EQ(tracker->Summary().num_deallocs, 1);
  fake.Deallocate(foreign);
}

TEST(TrackingAllocatorTest, ForwardsTheWrappedStatistics) {
  SystemAllocator system;
  std::shared_ptr<TrackingAllocator> tracker =
      TrackingAllocator::Create(system);
  void* p = tracker->Allocate(4096);
  EXPECT_EQ(tracker->GetStats()->num_allocs, 1);
  EXPECT_EQ(tracker->AllocatedSize(p), system.AllocatedSize(p));
  tracker->Deallocate(p);
}

TEST(TrackingAllocatorTest, ThreadsAllocatingAndFreeingAfterClose) {
  FakeAllocator fake(/*rounding=*/64);
  std::shared_ptr<TrackingAllocator> tracker = TrackingAllocator::Create(fake);
  std::vector<std::vector<void*>> held(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        held[t].push_back(tracker->Allocate(1 + (i * 13 + t) % 500));
        if (i % 2 == 1) {
          tracker->Deallocate(held[t].back());
          held[t].pop_back();
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  tracker->Close();
  Allocator* raw = tracker.get();
  std::weak_ptr<TrackingAllocator> observer = tracker;
  tracker.reset();
  threads.clear();
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (void* p : held[t]) EXPECT_TRUE(raw->CheckedDeallocate(p).ok());
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_TRUE(observer.expired());
  EXPECT_EQ(fake.held_bytes(), 0u);
}

TEST(LimitingAllocatorTest, RefusesPastTheCap) {
  FakeAllocator fake(/*rounding=*/0);
  LimitingAllocator capped(fake, 1000);
  EXPECT_EQ(capped.Name(), "limiting(fake)");
  void* a = capped.Allocate(600);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(capped.Allocate(401), nullptr);
  void* b = capped.Allocate(400);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(capped.Allocate(1), nullptr);
  EXPECT_EQ(capped.Allocate(SIZE_MAX - 10),
            nullptr);  // no overflow in the check
  capped.Deallocate(a);
  void* c = capped.Allocate(600);
  EXPECT_NE(c, nullptr);
  const AllocatorStats stats = *capped.GetStats();
  EXPECT_EQ(stats.bytes_limit, 1000u);
  EXPECT_EQ(stats.bytes_in_use, 1000u);
  EXPECT_EQ(stats.num_allocs, 3);
  EXPECT_EQ(stats.peak_bytes_in_use, 1000u);
  EXPECT_EQ(fake.peak_held_bytes(), 1000u);
  capped.Deallocate(b);
  capped.Deallocate(c);
}

TEST(LimitingAllocatorTest, ChargesTheWrappedAllocatedSize) {
  FakeAllocator fake(/*rounding=*/256);
  LimitingAllocator capped(fake, 1000);
  void* a = capped.Allocate(300);  // charged 512
  EXPECT_EQ(capped.AllocatedSize(a), 512u);
  EXPECT_EQ(capped.RequestedSize(a), 300u);
  // 450 passes the first check (512 + 450 <= 1000) but is charged 512: the
  // block goes back to the wrapped allocator.
  EXPECT_EQ(capped.Allocate(450), nullptr);
  EXPECT_EQ(fake.held_bytes(), 512u);
  void* b = capped.Allocate(256);
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(capped.GetStats()->bytes_in_use, 768u);
  capped.Deallocate(a);
  capped.Deallocate(b);
  EXPECT_EQ(capped.GetStats()->bytes_in_use, 0u);
  EXPECT_TRUE(capped.ClearStats());
  EXPECT_EQ(capped.GetStats()->peak_bytes_in_use, 0u);
}

TEST(LimitingAllocatorTest, AFailedWrappedAllocationReleasesItsReservation) {
  FakeAllocator fake(/*rounding=*/0);
  LimitingAllocator capped(fake, 100);
  EXPECT_EQ(capped.Allocate(0), nullptr);  // the wrapped allocator refuses
  void* p = capped.Allocate(100);
  EXPECT_NE(p, nullptr);
  capped.Deallocate(p);
}

TEST(LimitingAllocatorTest, MisuseChangesNothing) {
  FakeAllocator fake(/*rounding=*/0);
  LimitingAllocator capped(fake, 1000);
  void* mine = capped.Allocate(100);
  int on_stack = 0;
  EXPECT_EQ(capped.CheckedDeallocate(&on_stack).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(capped.GetStats()->bytes_in_use, 100u);
  EXPECT_TRUE(capped.CheckedDeallocate(mine).ok());
  EXPECT_THAT(std::string(capped.CheckedDeallocate(mine).message()),
              HasSubstr("already freed"));
  EXPECT_EQ(capped.GetStats()->bytes_in_use, 0u);
}

TEST(LimitingAllocatorTest, ThreadsNeverPassTheCapTogether) {
  FakeAllocator fake(/*rounding=*/0);
  LimitingAllocator capped(fake, 5000);
  std::atomic<int> refused = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<void*> held;
      for (int i = 0; i < 3000; ++i) {
        void* p = capped.Allocate(100 + (i * 7 + t) % 900);
        if (p == nullptr) {
          refused.fetch_add(1);
        } else {
          held.push_back(p);
        }
        if (held.size() > 12) {
          capped.Deallocate(held.front());
          held.erase(held.begin());
        }
      }
      for (void* p : held) capped.Deallocate(p);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_LE(fake.peak_held_bytes(), 10000u);
  EXPECT_GT(refused.load(),
            0);  // 4 threads x 7 blocks of up to 1000 B must hit it
  EXPECT_EQ(capped.GetStats()->bytes_in_use, 0u);
  EXPECT_EQ(fake.held_bytes(), 0u);
}

}  // namespace
}  // namespace tensormem
