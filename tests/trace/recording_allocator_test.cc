#include "tensormem/trace/recording_allocator.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/core/checked_math.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem {
namespace {

// A malloc-backed allocator that refuses requests above `limit` bytes or with
// an alignment that is not a power of two, and
// reports frees of pointers it did not hand out.
class FakeAllocator : public Allocator {
 public:
  explicit FakeAllocator(size_t limit) : limit_(limit) {}
  ~FakeAllocator() override {
    for (void* ptr : live_) std::free(ptr);
  }
  std::string Name() const override { return "fake"; }

 private:
  void* DoAllocate(size_t bytes, size_t alignment,
                   int32_t /*stream*/) override {
    if (bytes == 0 || bytes > limit_ || !IsPowerOfTwo(alignment))
      return nullptr;
    void* ptr = std::aligned_alloc(
        alignment, (bytes + alignment - 1) / alignment * alignment);
    std::lock_guard<std::mutex> lock(mutex_);
    live_.insert(ptr);
    return ptr;
  }
  absl::Status DoDeallocate(void* ptr) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (live_.erase(ptr) == 0)
        return absl::InvalidArgumentError("unknown pointer");
    }
    std::free(ptr);
    return absl::OkStatus();
  }

  const size_t limit_;
  std::mutex mutex_;
  absl::flat_hash_set<void*> live_;
};

std::string TempPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) /
          // CTest runs test processes in parallel: names are per process.
          (std::to_string(getpid()) + "_" + name))
      .string();
}

TEST(TraceRecordingAllocatorTest, RecordsAllocsFreesFailuresAndAlignment) {
  const std::string path = TempPath("recorded.trace");
  FakeAllocator fake(/*limit=*/1 << 20);
  {
    absl::StatusOr<std::unique_ptr<TraceWriter>> writer =
        TraceWriter::Open(path);
    ASSERT_TRUE(writer.ok());
    TraceRecordingAllocator recorder(fake, **writer);
    EXPECT_EQ(recorder.Name(), "fake");
    void* a = recorder.Allocate(100);
    void* b = recorder.Allocate(200, /*alignment=*/4096);
    EXPECT_EQ(recorder.Allocate(2 << 20),
              nullptr);  // refused: recorded as failed
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 4096, 0);
    EXPECT_TRUE(recorder.CheckedDeallocate(a).ok());
    int not_from_allocator = 0;
    EXPECT_FALSE(
        recorder.CheckedDeallocate(&not_from_allocator).ok());  // not recorded
    EXPECT_EQ(recorder.Allocate(100, /*alignment=*/48),
              nullptr);  // invalid: failed
    void* c = recorder.Allocate(300);
    recorder.Deallocate(b);
    EXPECT_EQ(recorder.events_recorded(), 7);
    ASSERT_TRUE((*writer)->Close().ok());
    recorder.Deallocate(c);  // after Close: dropped, but still freed
  }
  absl::StatusOr<Trace> trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->events.size(), 7);
  const std::vector<std::tuple<TraceOp, uint64_t, uint64_t, bool, uint32_t>>
      expected = {{TraceOp::kAlloc, 0, 100, false, 0},
                  {TraceOp::kAlloc, 1, 200, false, 4096},
                  {TraceOp::kAlloc, 2, 2 << 20, true, 0},
                  {TraceOp::kFree, 0, 0, false, 0},
                  {TraceOp::kAlloc, 3, 100, true, 0},  // alignment 48 left out
                  {TraceOp::kAlloc, 4, 300, false, 0},
                  {TraceOp::kFree, 1, 0, false, 0}};
  int64_t previous_time = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const TraceEvent& event = trace->events[i];
    const auto& [op, id, bytes, failed, alignment] = expected[i];
    EXPECT_EQ(event.op, op) << i;
    EXPECT_EQ(event.id, id) << i;
    EXPECT_EQ(event.bytes, bytes) << i;
    EXPECT_EQ(event.failed, failed) << i;
    EXPECT_EQ(event.alignment, alignment) << i;
    EXPECT_EQ(event.stream, 0) << i;
    EXPECT_GE(event.time_ns, previous_time) << i;
    previous_time = event.time_ns;
  }
}

TEST(TraceRecordingAllocatorTest, FourThreadsGiveAValidTraceWithOneStreamEach) {
  const std::string path = TempPath("threads.trace.gz");
  FakeAllocator fake(/*limit=*/1 << 20);
  constexpr int kThreads = 4;
  constexpr int kRoundsPerThread = 2000;
  {
    absl::StatusOr<std::unique_ptr<TraceWriter>> writer =
        TraceWriter::Open(path);
    ASSERT_TRUE(writer.ok());
    TraceRecordingAllocator recorder(fake, **writer);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&recorder, t] {
        std::vector<void*> held;
        for (int round = 0; round < kRoundsPerThread; ++round) {
          held.push_back(recorder.Allocate(16 + (round * 7 + t) % 512));
          // Keep a few blocks live so frees interleave with other threads'
          // allocations of the same addresses.
          if (held.size() > 3) {
            recorder.Deallocate(held.front());
            held.erase(held.begin());
          }
        }
        for (void* ptr : held) recorder.Deallocate(ptr);
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(recorder.events_recorded(), 2 * kThreads * kRoundsPerThread);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  // ReadTrace checks every free follows its allocation and no live id repeats.
  absl::StatusOr<Trace> trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->events.size(), 2 * kThreads * kRoundsPerThread);
  std::map<int32_t, int> events_per_stream;
  std::map<uint64_t, int32_t> stream_of_id;
  for (const TraceEvent& event : trace->events) {
    ++events_per_stream[event.stream];
    if (event.op == TraceOp::kAlloc) {
      EXPECT_FALSE(event.failed);
      stream_of_id[event.id] = event.stream;
    } else {
      EXPECT_EQ(stream_of_id[event.id], event.stream)
          << "freed by another thread";
    }
  }
  ASSERT_EQ(events_per_stream.size(), kThreads);
  for (const auto& [stream, count] : events_per_stream) {
    EXPECT_GE(stream, 0);
    EXPECT_LT(stream, kThreads);
    EXPECT_EQ(count, 2 * kRoundsPerThread);
  }
  EXPECT_EQ(stream_of_id.size(),
            kThreads * kRoundsPerThread);  // ids never reused
}

}  // namespace
}  // namespace tensormem
