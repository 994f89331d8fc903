// Regressions found by the fuzzers (fuzz/regressions/, docs/reliability.md),
// each named after what it found.
#include <fstream>
#include <iterator>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/trace/importers.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

// The fuzz input without its first byte (the target's device or mode
// choice).
std::string SnapshotOfFuzzInput(const std::string& name) {
  std::ifstream file(
      std::string(TENSORMEM_SOURCE_DIR) + "/fuzz/regressions/" + name,
      std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)),
                          std::istreambuf_iterator<char>());
  EXPECT_FALSE(bytes.empty()) << name;
  return bytes.empty() ? bytes : bytes.substr(1);
}

// fuzz/regressions/pickle_snapshot/time_us_difference_overflows: entries
// 2^54 us apart overflowed int64 when converted to nanoseconds.
TEST(FuzzRegressionTest, SnapshotTimesTooFarApartAreAnError) {
  absl::StatusOr<PytorchImport> snapshot = ParsePytorchSnapshot(
      SnapshotOfFuzzInput("pickle_snapshot/time_us_difference_overflows"),
      "snap.pickle");
  ASSERT_FALSE(snapshot.ok());
  EXPECT_THAT(snapshot.status().message(),
              HasSubstr("snap.pickle: device trace entry"));
  EXPECT_THAT(snapshot.status().message(), HasSubstr("is out of range"));
}

// fuzz/regressions/trace_reader/repeated_tag_key_interns_unused_tag: a line
// with "tag=X tag=" kept the last value but interned X, so the trace's tag
// table changed once formatted and parsed again. A known key given twice is
// now an error naming the line.
TEST(FuzzRegressionTest, RepeatedTagKeyIsAnErrorNamingTheLine) {
  const std::string text =
      SnapshotOfFuzzInput("trace_reader/repeated_tag_key_interns_unused_tag");
  absl::StatusOr<Trace> trace = ParseTrace(text, "fuzz.trace");
  ASSERT_FALSE(trace.ok());
  EXPECT_THAT(trace.status().message(),
              HasSubstr("fuzz.trace:2: key 'tag' given twice"));
  for (const char* line :
       {"a 1 8 t=1 t=2", "a 1 8 stream=1 stream=1", "a 1 8 align=8 align=8",
        "a 1 8 failed=1 failed=0"}) {
    EXPECT_FALSE(ParseTrace(line, "x").ok()) << line;
  }
  // Unknown keys are kept verbatim, repeated or not.
  EXPECT_TRUE(ParseTrace("a 1 8 color=red color=blue\n", "x").ok());
}

}  // namespace
}  // namespace tensormem
