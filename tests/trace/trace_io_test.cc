#include "tensormem/trace/trace_io.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) /
          // CTest runs test processes in parallel: names are per process.
          (std::to_string(getpid()) + "_" + name))
      .string();
}

std::string ErrorOf(std::string_view text) {
  absl::StatusOr<Trace> trace = ParseTrace(text, "t.trace");
  EXPECT_FALSE(trace.ok()) << "parsed: " << text;
  return trace.ok() ? "" : std::string(trace.status().message());
}

TEST(ParseTraceTest, ReadsEventsKeysCommentsAndBlankLines) {
  absl::StatusOr<Trace> trace = ParseTrace(
      "# tensormem-trace v1\n"
      "\n"
      "a 1 4096 align=256 stream=2 t=1000 tag=conv1\r\n"
      "  # indented comment\n"
      "a 2 10\ttag=conv1 color=red size_hint=3\n"
      "f 1 t=2000\n"
      "a 1 7 failed=1\n"
      "a 3 0 tag=fc",  // no final newline
      "t.trace");
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->events.size(), 5);
  const TraceEvent& first = trace->events[0];
  EXPECT_EQ(first.op, TraceOp::kAlloc);
  EXPECT_EQ(first.id, 1);
  EXPECT_EQ(first.bytes, 4096);
  EXPECT_EQ(first.alignment, 256);
  EXPECT_EQ(first.stream, 2);
  EXPECT_EQ(first.time_ns, 1000);
  EXPECT_EQ(trace->tags[first.tag], "conv1");
  EXPECT_EQ(trace->events[1].tag, first.tag);  // interned once
  EXPECT_EQ(trace->events[1].time_ns, TraceEvent::kNoTime);
  EXPECT_EQ(trace->events[2].op, TraceOp::kFree);
  EXPECT_EQ(trace->events[2].time_ns, 2000);
  EXPECT_TRUE(trace->events[3].failed);
  EXPECT_EQ(trace->events[4].bytes, 0);
  EXPECT_EQ(trace->tags[trace->events[4].tag], "fc");
  ASSERT_EQ(trace->extra_keys.size(), 1);
  EXPECT_EQ(trace->extra_keys[0].first, 1);
  EXPECT_EQ(trace->extra_keys[0].second, "color=red size_hint=3");
}

TEST(ParseTraceTest, IdMayBeReusedAfterItsFreeAndBlocksMayStayLive) {
  absl::StatusOr<Trace> trace = ParseTrace("a 5 1\nf 5\na 5 2\na 6 3\n");
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(trace->events.size(), 4);
}

TEST(ParseTraceTest, FailedAllocationDoesNotMakeItsIdLive) {
  EXPECT_THAT(ErrorOf("a 1 8 failed=1\nf 1\n"),
              HasSubstr("t.trace:2: free of id 1, which is not live"));
}

TEST(ParseTraceTest, ErrorsNameTheLine) {
  EXPECT_THAT(ErrorOf("a 1 8\nx 2\n"), HasSubstr("t.trace:2: unknown op 'x'"));
  EXPECT_THAT(ErrorOf("alloc 1 8\n"), HasSubstr("t.trace:1: unknown op"));
  EXPECT_THAT(ErrorOf("a 1 8\n\nf 2\n"),
              HasSubstr("t.trace:3: free of id 2, which is not live"));
  EXPECT_THAT(ErrorOf("a 1 8\nf 1\nf 1\n"),
              HasSubstr("t.trace:3: free of id 1"));
  EXPECT_THAT(ErrorOf("# h\na 1 8\na 1 9\n"),
              HasSubstr("t.trace:3: allocation of id 1, which is already live "
                        "(allocated at line 2)"));
  EXPECT_THAT(ErrorOf("a x1 8\n"),
              HasSubstr("t.trace:1: bad number 'x1' for id"));
  EXPECT_THAT(ErrorOf("a 1 -8\n"),
              HasSubstr("t.trace:1: bad number '-8' for bytes"));
  EXPECT_THAT(ErrorOf("a 1 18446744073709551616\n"),
              HasSubstr("bad number '18446744073709551616' for bytes"));
  EXPECT_THAT(ErrorOf("a 1 8 t=abc\n"),
              HasSubstr("t.trace:1: bad number 'abc' for t"));
  EXPECT_THAT(ErrorOf("a 1 8 t=-5\n"), HasSubstr("bad number '-5' for t"));
  EXPECT_THAT(ErrorOf("a 1 8 stream=9999999999\n"),
              HasSubstr("bad number '9999999999' for stream"));
  EXPECT_THAT(ErrorOf("a 1 8\na 2 8 align=48\n"),
              HasSubstr("t.trace:2: bad alignment 48: not a power of two"));
  EXPECT_THAT(ErrorOf("a 1 8 align=0\n"), HasSubstr("bad alignment 0"));
  EXPECT_THAT(ErrorOf("a 1 8 align=8589934592\n"),
              HasSubstr("bad alignment 8589934592"));
  EXPECT_THAT(ErrorOf("a 1 8 align=x\n"),
              HasSubstr("bad number 'x' for align"));
  EXPECT_THAT(ErrorOf("a 1\n"), HasSubstr("t.trace:1: missing byte count"));
  EXPECT_THAT(ErrorOf("f\n"), HasSubstr("t.trace:1: missing id"));
  EXPECT_THAT(ErrorOf("a 1 8 oops\n"),
              HasSubstr("t.trace:1: bad field 'oops' (expected key=value)"));
  EXPECT_THAT(ErrorOf("a 1 8\nf 1 9\n"), HasSubstr("t.trace:2: bad field '9'"));
  EXPECT_THAT(ErrorOf("a 1 8 failed=yes\n"),
              HasSubstr("bad value 'yes' for failed"));
  EXPECT_THAT(ErrorOf("a 1 8\nf 1 failed=1\n"),
              HasSubstr("t.trace:2: 'failed' applies to allocations only"));
}

TEST(FormatTraceTest, RoundTripsEveryField) {
  const std::string text =
      "# tensormem-trace v1\n"
      "a 1 4096 align=256 stream=2 t=1000 tag=conv1\n"
      "a 2 10 stream=-1 tag=conv1 color=red\n"
      "f 1 t=2000\n"
      "a 3 7 failed=1\n";
  absl::StatusOr<Trace> trace = ParseTrace(text);
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(FormatTrace(*trace), text);
}

TEST(FormatTraceTest, TagsWithSpacesAreWrittenWithUnderscores) {
  Trace trace;
  trace.tags.push_back("my tensor");
  TraceEvent event = TraceEvent::Alloc(1, 8);
  event.tag = 1;
  trace.events.push_back(event);
  EXPECT_EQ(FormatTrace(trace), "# tensormem-trace v1\na 1 8 tag=my_tensor\n");
}

// A trace large enough to cross the reader's 1 MiB chunks many times.
Trace BigTrace() {
  Trace trace;
  trace.tags.push_back("layer");
  for (uint64_t i = 0; i < 200000; ++i) {
    TraceEvent alloc = TraceEvent::Alloc(i, 1000 + i);
    alloc.time_ns = static_cast<int64_t>(i) * 10;
    alloc.tag = i % 2;
    trace.events.push_back(alloc);
    if (i >= 3) trace.events.push_back(TraceEvent::Free(i - 3));
  }
  return trace;
}

void ExpectSameEvents(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    const TraceEvent& x = a.events[i];
    const TraceEvent& y = b.events[i];
    ASSERT_TRUE(x.op == y.op && x.id == y.id && x.bytes == y.bytes &&
                x.time_ns == y.time_ns && a.tags[x.tag] == b.tags[y.tag])
        << "event " << i;
  }
}

TEST(TraceFileTest, WritesAndReadsPlainAndGzipFiles) {
  const Trace trace = BigTrace();
  for (const std::string name : {"big.trace", "big.trace.gz"}) {
    const std::string path = TempPath(name);
    ASSERT_TRUE(WriteTrace(trace, path).ok());
    absl::StatusOr<Trace> read = ReadTrace(path);
    ASSERT_TRUE(read.ok()) << read.status();
    ExpectSameEvents(trace, *read);
  }
  // The .gz file really is compressed: gzip magic, and much smaller.
  std::ifstream gz(TempPath("big.trace.gz"), std::ios::binary);
  char magic[2] = {};
  gz.read(magic, 2);
  EXPECT_EQ(static_cast<unsigned char>(magic[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(magic[1]), 0x8b);
  EXPECT_LT(std::filesystem::file_size(TempPath("big.trace.gz")) * 3,
            std::filesystem::file_size(TempPath("big.trace")));
}

TEST(TraceFileTest, ReadFileInflatedStopsAtMaxBytes) {
  const std::string path = TempPath("small.trace.gz");
  ASSERT_TRUE(WriteTrace(BigTrace(), path).ok());
  absl::StatusOr<std::string> start = ReadFileInflated(path, 10);
  ASSERT_TRUE(start.ok()) << start.status();
  EXPECT_EQ(*start, "# tensorme");
  absl::StatusOr<std::string> whole = ReadFileInflated(path);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, FormatTrace(BigTrace()));
}

TEST(TraceFileTest, StreamingReaderReportsLineOfLateError) {
  const std::string path = TempPath("late_error.trace.gz");
  {
    absl::StatusOr<std::unique_ptr<TraceWriter>> writer =
        TraceWriter::Open(path);
    ASSERT_TRUE(writer.ok());
    for (uint64_t i = 0; i < 150000; ++i) {
      (*writer)->Write(TraceEvent::Alloc(i, 64));
    }
    (*writer)->Write(TraceEvent::Free(999999999));
    ASSERT_TRUE((*writer)->Close().ok());
  }
  absl::StatusOr<std::unique_ptr<TraceReader>> reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok());
  TraceEvent event;
  int64_t events = 0;
  absl::StatusOr<bool> more;
  while ((more = (*reader)->Next(event)).ok() && *more) ++events;
  EXPECT_EQ(events, 150000);
  ASSERT_FALSE(more.ok());
  // Line 1 is the header, so the bad free is on line 150002.
  EXPECT_THAT(
      more.status().message(),
      HasSubstr(path + ":150002: free of id 999999999, which is not live"));
}

TEST(TraceFileTest, MissingFileAndOverlongLineAreErrors) {
  absl::StatusOr<Trace> missing = ReadTrace(TempPath("no_such.trace"));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(),
              HasSubstr("no_such.trace: cannot open"));

  const std::string path = TempPath("binary.trace");
  std::ofstream(path) << std::string(3 << 20, 'a');
  absl::StatusOr<Trace> binary = ReadTrace(path);
  ASSERT_FALSE(binary.ok());
  EXPECT_THAT(binary.status().message(), HasSubstr(":1: line longer than"));
}

TEST(TraceWriterTest, ReportsWriteFailure) {
  std::FILE* full = std::fopen("/dev/full", "wb");
  if (full == nullptr) GTEST_SKIP() << "/dev/full not available";
  std::unique_ptr<TraceWriter> writer =
      TraceWriter::ToStream(full, "/dev/full");
  writer->Write(TraceEvent::Alloc(1, 8));
  const absl::Status status = writer->Close();
  std::fclose(full);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("/dev/full: write failed"));
}

}  // namespace
}  // namespace tensormem
