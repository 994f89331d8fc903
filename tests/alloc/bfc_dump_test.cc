// What the BFC allocator reports: memory dumps, occupancy, OOM explanations.
#include <memory>
#include <string>
#include <vector>

#include "alloc/bfc_test_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/fault_injecting_sub_allocator.h"
#include "tensormem/alloc/simulated_sub_allocator.h"

namespace tensormem {
namespace {

using testing::MakeSimulatedBfc;
using testing::QuietOptions;

TEST(BfcDumpTest, JsonHasEveryChunkAndTheStats) {
  auto allocator = MakeSimulatedBfc(1 * kMiB, QuietOptions(false));
  void* a = allocator->AllocateRaw(1, 1000);
  void* b = allocator->AllocateRaw(1, 5000);
  allocator->Deallocate(a);
  const nlohmann::json json = allocator->RecordMemoryDump().ToJson();
  EXPECT_EQ(json["allocator_name"], "bfc");
  ASSERT_EQ(json["regions"].size(), 1u);
  EXPECT_EQ(json["regions"][0]["offset"], 0);
  EXPECT_EQ(json["regions"][0]["size"], 1 * kMiB);
  const nlohmann::json& chunks = json["regions"][0]["chunks"];
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0]["in_use"], false);
  EXPECT_EQ(chunks[0]["size"], 1024);
  EXPECT_EQ(chunks[1]["in_use"], true);
  EXPECT_EQ(chunks[1]["offset"], 1024);
  EXPECT_EQ(chunks[1]["requested_size"], 5000);
  EXPECT_EQ(chunks[1]["size"], 5120);
  EXPECT_EQ(chunks[1]["bin"], 4);
  EXPECT_EQ(chunks[1]["allocation_id"], 2);
  EXPECT_EQ(json["stats"]["bytes_in_use"], 5120);
  EXPECT_EQ(json["stats"]["bytes_limit"], 1 * kMiB);
  EXPECT_EQ(json["stats"]["largest_free_block_bytes"], 1 * kMiB - 1024 - 5120);
  // Free: 1024 + the tail; fragmentation = 1024 / free.
  const double free_bytes = 1 * kMiB - 5120;
  EXPECT_DOUBLE_EQ(json["fragmentation"].get<double>(), 1024 / free_bytes);
  EXPECT_DOUBLE_EQ(allocator->Fragmentation(), 1024 / free_bytes);
  EXPECT_EQ(json["bins"].size(), 21u);
  allocator->Deallocate(b);
  EXPECT_EQ(allocator->Fragmentation(), 0.0);
}

TEST(BfcDumpTest, TextNamesChunksAndStats) {
  auto allocator = MakeSimulatedBfc(1 * kMiB, QuietOptions(false));
  void* p = allocator->AllocateRaw(1, 1000);
  const std::string text = allocator->RecordMemoryDump().ToText();
  EXPECT_NE(text.find("InUse at 0x0 of size 1024 (requested 1000, id 1)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Free  at 0x400"), std::string::npos) << text;
  EXPECT_NE(text.find("InUse:"), std::string::npos) << text;
  allocator->Deallocate(p);
}

TEST(BfcDumpTest, RenderOccupancy) {
  auto allocator = MakeSimulatedBfc(1 * kMiB, QuietOptions(false));
  EXPECT_EQ(allocator->RenderOccupancy(), "<allocator contains no memory>");
  // A quarter requested, rounded up by 256 bytes of slack.
  void* p = allocator->AllocateRaw(1, 256 * kKiB - 256 + 1);
  const std::string picture = allocator->RenderOccupancy();
  ASSERT_EQ(picture.size(), 100u);
  EXPECT_EQ(picture.substr(0, 25), std::string(25, '*'));
  EXPECT_EQ(picture.substr(25), std::string(75, '_'));
  allocator->Deallocate(p);
  EXPECT_EQ(allocator->RenderOccupancy(), std::string(100, '_'));
}

TEST(BfcFailureReportTest, TellsFragmentationFromExhaustion) {
  auto allocator = MakeSimulatedBfc(1 * kMiB, QuietOptions(false));
  EXPECT_EQ(allocator->LastFailureReport(), "");
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i)
    blocks.push_back(allocator->AllocateRaw(1, 128 * kKiB));
  for (int i = 0; i < 8; i += 2) allocator->Deallocate(blocks[i]);
  // 512 KiB free in four separate 128 KiB holes.
  EXPECT_EQ(allocator->AllocateRaw(1, 256 * kKiB), nullptr);
  std::string report = allocator->LastFailureReport();
  EXPECT_NE(report.find("rounded to 262144"), std::string::npos) << report;
  EXPECT_NE(report.find("fragmentation"), std::string::npos) << report;
  EXPECT_NE(report.find("largest free block 128.00KiB"), std::string::npos)
      << report;
  EXPECT_NE(report.find("limit 1.00MiB"), std::string::npos) << report;
  EXPECT_NE(report.find("in use 512.00KiB"), std::string::npos) << report;
  for (int i = 0; i < 8; i += 2)
    blocks[i] = allocator->AllocateRaw(1, 128 * kKiB);
  EXPECT_EQ(allocator->AllocateRaw(1, 256), nullptr);
  report = allocator->LastFailureReport();
  EXPECT_NE(report.find("exhaustion"), std::string::npos) << report;
  EXPECT_EQ(allocator->AllocateRaw(1, 2 * kMiB), nullptr);
  EXPECT_NE(allocator->LastFailureReport().find("exceeds the memory limit"),
            std::string::npos);
}

TEST(BfcFailureReportTest, UpstreamRefusal) {
  auto upstream = std::make_unique<FaultInjectingSubAllocator>(
      std::make_unique<SimulatedSubAllocator>(kGiB));
  upstream->SetFailAlways(true);
  BfcAllocator allocator(std::move(upstream), 1 * kMiB, QuietOptions(true));
  EXPECT_EQ(allocator.AllocateRaw(1, 4096), nullptr);
  EXPECT_NE(allocator.LastFailureReport().find("upstream refused"),
            std::string::npos)
      << allocator.LastFailureReport();
}

TEST(BfcDumpTest, ShortchangingUpstreamStillTilesRegions) {
  // The upstream reports 100 bytes less than asked: the region is what it
  // reports.
  auto upstream = std::make_unique<FaultInjectingSubAllocator>(
      std::make_unique<SimulatedSubAllocator>(kGiB));
  upstream->SetShortfall(100);
  BfcAllocator allocator(std::move(upstream), 64 * kMiB, QuietOptions(true));
  void* p = allocator.AllocateRaw(1, 4096);
  EXPECT_NE(p, nullptr);
  ASSERT_TRUE(testing::InvariantsHold(allocator));
  EXPECT_EQ(allocator.GetStats()->pool_bytes, 2 * kMiB - 100);
  EXPECT_EQ(allocator.RecordMemoryDump().regions[0].size, 2 * kMiB - 256);
  allocator.Deallocate(p);
}

}  // namespace
}  // namespace tensormem
