// The usage examples of the alloc layer's public headers, compiled and run.
// Each test opens with its header's example as the header writes it (keep the
// two in sync), then checks what the example promises.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/host_sub_allocator.h"
#include "tensormem/alloc/limiting_allocator.h"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/alloc/sharded_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/alloc/system_allocator.h"
#include "tensormem/alloc/tracking_allocator.h"
#include "tensormem/core/status_macros.h"
#include "tensormem/core/units.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

TEST(AllocExamples, BfcAllocator) {
  BfcAllocator::Options options;
  options.allow_growth = false;
  BfcAllocator allocator(std::make_unique<HostSubAllocator>(), 1 * kGiB,
                         options);
  void* p = allocator.Allocate(4096, /*alignment=*/256);
  ASSERT_NE(p, nullptr) << allocator.LastFailureReport();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  EXPECT_EQ(allocator.RequestedSize(p), 4096u);
  allocator.Deallocate(p);
  const std::string dump = allocator.RecordMemoryDump().ToText();
  EXPECT_FALSE(dump.empty());
  // TensorFlow's entry point takes the same request in TensorFlow's order.
  void* raw = allocator.AllocateRaw(/*alignment=*/256, 4096);
  EXPECT_EQ(allocator.RequestedSize(raw), 4096u);
  allocator.Deallocate(raw);
}

absl::Status AllocatorSpecExample() {
  AllocatorSpec spec;
  TM_RETURN_IF_ERROR(SetAllocatorOption(spec, "policy", "pytorch"));
  TM_RETURN_IF_ERROR(
      SetAllocatorOption(spec, "config", "expandable_segments:True"));
  TM_ASSIGN_OR_RETURN(BuiltAllocator built, CreateAllocator(spec));
  void* p = built.allocator->Allocate(4096);

  EXPECT_NE(p, nullptr);
  EXPECT_EQ(spec.policy, "pytorch");
  EXPECT_NE(built.bfc, nullptr);
  EXPECT_THAT(built.bfc->PolicyDescription(), HasSubstr("expandable"));
  return built.allocator->CheckedDeallocate(p);
}

TEST(AllocExamples, AllocatorSpec) {
  EXPECT_EQ(AllocatorSpecExample(), absl::OkStatus());
}

TEST(AllocExamples, PolicyRegistry) {
  std::vector<std::string> names;
  for (const PolicyInfo& info : Policies()) names.emplace_back(info.name);
  absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy = CreatePolicy(
      "pytorch", {.memory_limit = 16 * kGiB, .upstream_coalesces = true},
      "expandable_segments:True");

  EXPECT_EQ(names.front(), kDefaultPolicy);
  EXPECT_THAT(names, ::testing::Contains("pytorch"));
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_THAT((*policy)->Describe(), HasSubstr("expandable"));
}

absl::Status ShardedAllocatorExample() {
  std::vector<std::unique_ptr<BfcAllocator>> shards;
  for (int i = 0; i < 2; ++i)
    shards.push_back(std::make_unique<BfcAllocator>(
        std::make_unique<SimulatedSubAllocator>(kGiB), kGiB));
  TM_ASSIGN_OR_RETURN(std::unique_ptr<ShardedAllocator> sharded,
                      ShardedAllocator::Create(std::move(shards)));
  void* p = sharded->Allocate(4096);

  EXPECT_EQ(sharded->num_shards(), 2);
  EXPECT_EQ(sharded->RequestedSize(p), 4096u);
  return sharded->CheckedDeallocate(p);  // from any thread
}

TEST(AllocExamples, ShardedAllocator) {
  EXPECT_EQ(ShardedAllocatorExample(), absl::OkStatus());
}

TEST(AllocExamples, TrackingAllocator) {
  BfcAllocator bfc(std::make_unique<SimulatedSubAllocator>(kGiB), kGiB);
  std::shared_ptr<TrackingAllocator> tracker = TrackingAllocator::Create(bfc);
  void* output = tracker->Allocate(4096);
  TrackingSummary at_close = tracker->Close();
  Allocator* keep = tracker.get();
  tracker.reset();           // the tracker stays alive for `output`
  keep->Deallocate(output);  // counted, then the tracker goes away

  EXPECT_EQ(at_close.num_allocs, 1);
  EXPECT_EQ(at_close.outstanding_allocations, 1);
  EXPECT_GE(at_close.high_watermark, 4096u);
}

TEST(AllocExamples, LimitingAllocator) {
  SystemAllocator system;
  LimitingAllocator capped(system, 64 * kMiB);
  void* p = capped.Allocate(100 * kMiB);  // nullptr: over the cap

  EXPECT_EQ(p, nullptr);
  void* fits = capped.Allocate(kMiB);
  EXPECT_NE(fits, nullptr);
  capped.Deallocate(fits);
}

}  // namespace
}  // namespace tensormem
