// Placing a learnt iteration around blocks already in memory
// (loop_placement.h).
#include "alloc/loop_placement.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "alloc/placement_job.h"
#include "gtest/gtest.h"

namespace tensormem::alloc_internal {
namespace {

// A training-like history: weights made first; each iteration makes an
// activation, frees the last iteration's gradient (so the gradient wraps),
// makes and frees a scratch block, makes its gradient, frees the activation.
// Returns the plan of one iteration.
LoopPlan TrainingPlan() {
  LoopHistory history;
  uint64_t next = 0;
  auto alloc = [&](uint64_t bytes) {
    history.events.push_back(
        {.kind = LoopEventKind::kAlloc, .alignment = 256, .value = bytes});
    return next++;
  };
  auto free = [&](uint64_t sequence) {
    history.events.push_back({.kind = LoopEventKind::kFree, .value = sequence});
  };
  alloc(8192);  // weights
  uint64_t gradient = alloc(4096);
  for (int i = 0; i < 4; ++i) {
    const uint64_t activation = alloc(1024);
    free(gradient);
    const uint64_t scratch = alloc(3072);
    free(scratch);
    gradient = alloc(4096);
    free(activation);
  }
  alloc(1024);
  alloc(3072);
  const std::optional<LoopShape> shape = FindLoop(history, {});
  EXPECT_TRUE(shape.has_value());
  EXPECT_EQ(shape->period, 3u);
  absl::StatusOr<LoopPlan> plan = BuildLoopPlan(history, *shape);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *std::move(plan);
}

int64_t WrappingRequest(const LoopPlan& plan) {
  for (size_t j = 0; j < plan.requests.size(); ++j)
    if (plan.requests[j].wraps) return static_cast<int64_t>(j);
  return -1;
}

TEST(PlaceAroundTest, AWrappingBlockKeepsThePlaceOfItsPreviousInstance) {
  const LoopPlan plan = TrainingPlan();
  const int64_t wrapping = WrappingRequest(plan);
  ASSERT_GE(wrapping, 0);
  // Weights at 0; the previous instance of the wrapping block above a hole
  // of 1 KiB, and 1 KiB larger than it.
  const uint64_t place = 8192 + 1024;
  const uint64_t bytes = plan.requests[wrapping].bytes;
  const std::vector<LiveBlock> live = {
      {.offset = 0, .bytes = 8192},
      {.offset = place, .bytes = bytes + 1024, .previous_request = wrapping}};
  const absl::StatusOr<PlacementAround> placed = PlaceAround(plan, live);
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_EQ(placed->plan.requests[wrapping].offset, place);
  EXPECT_EQ(placed->reused, (std::vector<uint8_t>{0, 1}));
  uint64_t top = place + bytes + 1024;
  for (size_t j = 0; j < plan.requests.size(); ++j) {
    const PlannedRequest& request = placed->plan.requests[j];
    if (!request.in_arena) continue;
    EXPECT_GE(request.offset, 8192u) << "request " << j << " on the weights";
    // What lands on the previous instance's block (the wrapping block, and
    // anything in the rest of it after its free) waits for that free.
    const bool gated = placed->gate_begin[j + 1] > placed->gate_begin[j];
    const bool on_block = request.offset < place + bytes + 1024 &&
                          request.offset + request.bytes > place;
    EXPECT_EQ(gated, on_block) << j;
    top = std::max(top, request.offset + request.bytes);
  }
  EXPECT_EQ(placed->plan.arena_bytes, top);
}

TEST(PlaceAroundTest, APlaceFreedDuringTheIterationIsReusedBehindAGate) {
  const LoopPlan plan = TrainingPlan();
  const int64_t wrapping = WrappingRequest(plan);
  ASSERT_GE(wrapping, 0);
  ASSERT_GE(plan.requests[wrapping].previous_freed, 0);
  // The gradient's previous instance is too small to hold the new one (it
  // cannot be its place), but it is freed during the iteration: what comes
  // after its free may use it, once it was freed.
  LoopPlan small = plan;
  small.requests[wrapping].bytes = 8192;
  for (Buffer& buffer : small.arena_buffers)
    if (buffer.id == static_cast<uint64_t>(wrapping)) buffer.size = 8192;
  const std::vector<LiveBlock> live = {
      {.offset = 0, .bytes = 4096, .previous_request = wrapping}};
  const absl::StatusOr<PlacementAround> placed = PlaceAround(small, live);
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_EQ(placed->reused, (std::vector<uint8_t>{1}));
  bool any_gated = false;
  for (size_t j = 0; j < small.requests.size(); ++j) {
    const PlannedRequest& request = placed->plan.requests[j];
    const bool on_block = request.offset < 4096;
    const bool gated = placed->gate_begin[j + 1] > placed->gate_begin[j];
    EXPECT_EQ(on_block, gated) << j;
    any_gated |= gated;
  }
  EXPECT_TRUE(any_gated);
}

TEST(PlaceAroundTest, OverlappingLiveBlocksAreRefused) {
  const LoopPlan plan = TrainingPlan();
  const std::vector<LiveBlock> live = {{.offset = 0, .bytes = 4096},
                                       {.offset = 2048, .bytes = 4096}};
  const absl::StatusOr<PlacementAround> placed = PlaceAround(plan, live);
  EXPECT_FALSE(placed.ok());
}

TEST(PlaceAroundTest, NoPlacementIsTriedWhenThePeakExceedsTheMemory) {
  const LoopPlan plan = TrainingPlan();
  const std::vector<LiveBlock> live = {{.offset = 0, .bytes = 8192}};
  const absl::StatusOr<PlacementAround> placed = PlaceAround(plan, live);
  ASSERT_TRUE(placed.ok()) << placed.status();
  // The placement's top is at least the peak; the weights alone are less.
  EXPECT_TRUE(
      PlaceAround(plan, live, {.limit = placed->plan.arena_bytes}).ok());
  const absl::Status refused =
      PlaceAround(plan, live, {.limit = 8192}).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("at its peak"), std::string::npos)
      << refused;
}

std::vector<uint64_t> Offsets(const LoopPlan& plan) {
  std::vector<uint64_t> offsets;
  for (const PlannedRequest& request : plan.requests)
    offsets.push_back(request.offset);
  return offsets;
}

TEST(PlacementJobTest, ABackgroundJobPlacesAsTheCallerWould) {
  auto plan = std::make_shared<const LoopPlan>(TrainingPlan());
  const std::vector<LiveBlock> live = {{.offset = 0, .bytes = 8192}};
  const absl::StatusOr<PlacementAround> here = PlaceAround(*plan, live);
  ASSERT_TRUE(here.ok()) << here.status();
  PlacementJob job(/*background=*/true);
  EXPECT_EQ(job.plan(), nullptr);
  job.Start(plan, live, {});
  EXPECT_EQ(job.plan(), plan.get());
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (!job.Done() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(job.Done());
  EXPECT_EQ(job.live(), live);
  const absl::StatusOr<PlacementAround> there = job.Take();
  ASSERT_TRUE(there.ok()) << there.status();
  EXPECT_EQ(Offsets(there->plan), Offsets(here->plan));
  EXPECT_EQ(there->plan.arena_bytes, here->plan.arena_bytes);
  // Taken once: the job is forgotten.
  EXPECT_EQ(job.plan(), nullptr);
  EXPECT_FALSE(job.Done());
  EXPECT_FALSE(job.Take().ok());
}

TEST(PlacementJobTest, StartingAgainOrStoppingDropsTheJobUnderWay) {
  auto plan = std::make_shared<const LoopPlan>(TrainingPlan());
  PlacementJob job(/*background=*/true);
  job.Start(plan, {{.offset = 0, .bytes = 8192}}, {});
  const std::vector<LiveBlock> moved = {{.offset = 4096, .bytes = 8192}};
  job.Start(plan, moved, {});
  EXPECT_EQ(job.live(), moved);
  job.Stop();
  EXPECT_EQ(job.plan(), nullptr);
  EXPECT_FALSE(job.Done());
  // Inline, the placement is done when Start returns.
  PlacementJob inline_job(/*background=*/false);
  inline_job.Start(plan, moved, {});
  EXPECT_TRUE(inline_job.Done());
  EXPECT_TRUE(inline_job.Take().ok());
}

}  // namespace
}  // namespace tensormem::alloc_internal
