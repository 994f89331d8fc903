// Regressions found by the fuzzers (fuzz/regressions/, docs/reliability.md),
// each named after what it found.
#include <fstream>
#include <iterator>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/trace/importers.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

// The fuzz input without its first byte (the target's device choice).
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

}  // namespace
}  // namespace tensormem
