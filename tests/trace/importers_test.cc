// Golden tests of the importers: each converts a small hand-made file of
// tests/data/trace and must give exactly the trace next to it.
#include "tensormem/trace/importers.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shared_data.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

std::string DataPath(const std::string& name) {
  return std::string(TENSORMEM_TEST_DATA) + "/trace/" + name;
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string RmmError(std::string_view text) {
  absl::StatusOr<Trace> trace = ParseRmmLog(text, "log.csv");
  EXPECT_FALSE(trace.ok()) << text;
  return trace.ok() ? "" : std::string(trace.status().message());
}

TEST(RmmLogTest, MatchesGoldenTrace) {
  absl::StatusOr<Trace> trace = ReadRmmLog(DataPath("rmm_log.csv"));
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(FormatTrace(*trace), ReadFile(DataPath("rmm_log.trace")));
}

TEST(RmmLogTest, ColumnsMayComeInAnyOrderWithoutTimeOrStream) {
  absl::StatusOr<Trace> trace =
      ParseRmmLog("Size,Pointer,Action\n64,0x10,allocate\n64,16,free\n");
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(FormatTrace(*trace), "# tensormem-trace v1\na 0 64\nf 0\n");
}

TEST(RmmLogTest, MalformedRowsNameTheirLine) {
  const std::string header = "Thread,Time,Action,Pointer,Size,Stream\n";
  EXPECT_THAT(
      RmmError(header + "1,00:00:01.0,free,0x10,8,0x0\n"),
      HasSubstr("log.csv:2: free of pointer 0x10, which is not allocated"));
  EXPECT_THAT(
      RmmError(header + "1,00:00:01.0,allocate,0x10,8,0\n"
                        "1,00:00:01.0,allocate,0x10,8,0\n"),
      HasSubstr("log.csv:3: allocate at pointer 0x10, which is already"));
  EXPECT_THAT(RmmError(header + "1,00:00:01.0,reallocate,0x10,8,0\n"),
              HasSubstr("log.csv:2: unknown action 'reallocate'"));
  EXPECT_THAT(RmmError(header + "1,00:00:01.0,allocate,0xzz,8,0\n"),
              HasSubstr("log.csv:2: bad pointer '0xzz'"));
  EXPECT_THAT(RmmError(header + "1,00:00:01.0,allocate,0x10,-8,0\n"),
              HasSubstr("log.csv:2: bad size '-8'"));
  EXPECT_THAT(RmmError(header + "1,00:00:01.0,allocate,0x10,8,s1\n"),
              HasSubstr("log.csv:2: bad stream 's1'"));
  EXPECT_THAT(RmmError(header + "\n1,yesterday,allocate,0x10,8,0\n"),
              HasSubstr("log.csv:3: bad time 'yesterday'"));
  EXPECT_THAT(RmmError(header + "1,00:00:01.0,allocate,0x10\n"),
              HasSubstr("log.csv:2: expected 6 fields, found 4"));
  EXPECT_THAT(
      RmmError("Thread,Time,Pointer\n"),
      HasSubstr("log.csv:1: header must name Action, Pointer and Size"));
  EXPECT_THAT(RmmError(""), HasSubstr("no header row"));
}

TEST(PytorchSnapshotTest, BothProtocolsMatchGoldenTraceOfDevice0) {
  for (const char* name :
       {"snapshot_protocol2.pickle", "snapshot_protocol4.pickle"}) {
    absl::StatusOr<PytorchImport> result = ReadPytorchSnapshot(DataPath(name));
    ASSERT_TRUE(result.ok()) << name << ": " << result.status();
    EXPECT_EQ(FormatTrace(result->trace),
              ReadFile(DataPath("snapshot_device0.trace")))
        << name;
    EXPECT_EQ(result->blocks_live_at_start, 3) << name;
    EXPECT_EQ(result->entries_skipped, 3)
        << name;  // segment_alloc, free_requested, snapshot
    EXPECT_EQ(result->devices, 2) << name;
  }
}

TEST(PytorchSnapshotTest, DeviceOptionSelectsTheTrace) {
  absl::StatusOr<PytorchImport> device1 =
      ReadPytorchSnapshot(DataPath("snapshot_protocol4.pickle"), {.device = 1});
  ASSERT_TRUE(device1.ok()) << device1.status();
  EXPECT_EQ(FormatTrace(device1->trace),
            ReadFile(DataPath("snapshot_device1.trace")));
  EXPECT_EQ(device1->blocks_live_at_start, 0);

  absl::StatusOr<PytorchImport> device2 =
      ReadPytorchSnapshot(DataPath("snapshot_protocol4.pickle"), {.device = 2});
  ASSERT_FALSE(device2.ok());
  EXPECT_THAT(
      device2.status().message(),
      HasSubstr(
          "snapshot_protocol4.pickle: device_traces: no device 2 (the snapshot "
          "has traces for 2 devices)"));
}

TEST(PytorchSnapshotTest, LegacySegmentListGivesTheLiveBlocks) {
  absl::StatusOr<PytorchImport> result =
      ReadPytorchSnapshot(DataPath("legacy_segments.pickle"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(FormatTrace(result->trace),
            ReadFile(DataPath("legacy_segments.trace")));
}

TEST(PytorchSnapshotTest, NotASnapshotIsAnError) {
  // pickle.dumps({"a": 1}, protocol=2)
  std::string dict_pickle = "\x80\x02}q";
  dict_pickle += std::string(1, '\0') + "X" + std::string("\x01\0\0\0", 4) +
                 "aq\x01K\x01s.";
  absl::StatusOr<PytorchImport> result =
      ParsePytorchSnapshot(dict_pickle, "x.pickle");
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(),
              HasSubstr("x.pickle: top level: not a PyTorch"));

  absl::StatusOr<PytorchImport> text =
      ParsePytorchSnapshot("# tensormem-trace v1\n", "y.pickle");
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(),
              HasSubstr("y.pickle: offset 0: unsupported pickle opcode"));
}

TEST(BufferSetConversionTest, BothConventionsGiveTheGoldenTrace) {
  for (const char* name : {"buffers_half_open.csv", "buffers_closed.csv"}) {
    absl::StatusOr<BufferSet> set = ReadBufferSetCsv(DataPath(name));
    ASSERT_TRUE(set.ok()) << set.status();
    absl::StatusOr<Trace> trace = BufferSetToTrace(*set);
    ASSERT_TRUE(trace.ok()) << trace.status();
    EXPECT_EQ(FormatTrace(*trace), ReadFile(DataPath("buffers.trace"))) << name;
  }
}

TEST(BufferSetConversionTest, TraceToBuffersUsesEventIndices) {
  absl::StatusOr<Trace> trace = ReadTrace(DataPath("buffers.trace"));
  ASSERT_TRUE(trace.ok()) << trace.status();
  absl::StatusOr<BufferSet> set = TraceToBufferSet(*trace);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(FormatBufferSetCsv(*set),
            "id,lower,upper,size\n0,0,3,100\n3,1,7,50\n1,2,5,200\n2,4,6,300\n");
  // And back: the same trace, event for event.
  absl::StatusOr<Trace> again = BufferSetToTrace(*set);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(FormatTrace(*again), FormatTrace(*trace));
}

TEST(BufferSetConversionTest, RoundTripKeepsConflictsAndPeakOfARealBufferSet) {
  TENSORMEM_SHARED_DATA_OR_SKIP(path, "minimalloc/challenging/A.1048576.csv");
  absl::StatusOr<BufferSet> original = ReadBufferSetCsv(path);
  ASSERT_TRUE(original.ok()) << original.status();
  absl::StatusOr<Trace> trace = BufferSetToTrace(*original);
  ASSERT_TRUE(trace.ok());
  absl::StatusOr<BufferSet> back = TraceToBufferSet(*trace);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->buffers.size(), original->buffers.size());
  EXPECT_EQ(PeakLiveBytes(*back), PeakLiveBytes(*original));
  absl::flat_hash_map<uint64_t, Buffer> by_id;
  for (const Buffer& buffer : back->buffers) by_id[buffer.id] = buffer;
  for (const Buffer& a : original->buffers) {
    ASSERT_EQ(by_id[a.id].size, a.size);
    for (const Buffer& b : original->buffers) {
      ASSERT_EQ(a.LiveAtSameTime(b), by_id[a.id].LiveAtSameTime(by_id[b.id]))
          << a.id << " vs " << b.id;
    }
  }
}

TEST(BufferSetConversionTest,
     StillLiveBlocksEndAtTheTraceEndAndFailuresAreSkipped) {
  absl::StatusOr<Trace> trace =
      ParseTrace("a 7 10\na 8 99 failed=1\na 9 20\nf 9\n");
  ASSERT_TRUE(trace.ok());
  absl::StatusOr<BufferSet> set =
      TraceToBufferSet(*trace, IntervalConvention::kClosed);
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(FormatBufferSetCsv(*set),
            "id,first_task,last_task,size\n7,0,3,10\n9,2,2,20\n");
}

TEST(BufferSetConversionTest, ReusedIdsAreRenumberedInAllocationOrder) {
  absl::StatusOr<Trace> trace = ParseTrace("a 5 10\nf 5\na 5 20\n");
  ASSERT_TRUE(trace.ok());
  absl::StatusOr<BufferSet> set = TraceToBufferSet(*trace);
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(FormatBufferSetCsv(*set),
            "id,lower,upper,size\n0,0,1,10\n1,2,3,20\n");
}

TEST(BufferSetConversionTest, InconsistentInputsAreErrors) {
  Trace bad;
  bad.events = {TraceEvent::Free(3)};
  absl::StatusOr<BufferSet> set = TraceToBufferSet(bad);
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.status().message(),
              HasSubstr("event 0: free of id 3, which is not live"));

  BufferSet duplicate;
  duplicate.buffers = {Buffer{.id = 1, .lower = 0, .upper = 1, .size = 8},
                       Buffer{.id = 1, .lower = 2, .upper = 3, .size = 8}};
  absl::StatusOr<Trace> trace = BufferSetToTrace(duplicate);
  ASSERT_FALSE(trace.ok());
  EXPECT_THAT(trace.status().message(), HasSubstr("duplicate buffer id 1"));
}

}  // namespace
}  // namespace tensormem
