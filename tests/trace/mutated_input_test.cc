// Corrupted inputs never crash a reader: each golden file is mutated many
// times (bytes flipped, cut, duplicated) and every reader must either parse it
// or return an error that names the input.
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/trace/importers.h"
#include "tensormem/trace/pickle.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

std::string ReadData(const std::string& name) {
  std::ifstream file(std::string(TENSORMEM_TEST_DATA) + "/trace/" + name,
                     std::ios::binary);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

std::string Mutate(std::string bytes, std::mt19937& random) {
  const int edits = 1 + random() % 4;
  for (int i = 0; i < edits && !bytes.empty(); ++i) {
    const size_t at = random() % bytes.size();
    switch (random() % 4) {
      case 0:
        bytes[at] = static_cast<char>(random());
        break;
      case 1:
        bytes.resize(at);
        break;
      case 2:
        bytes.insert(at, bytes.substr(at, random() % 16));
        break;
      default:
        bytes[at] ^= static_cast<char>(1 << (random() % 8));
    }
  }
  return bytes;
}

template <typename Parse>
void FuzzFile(const std::string& name, Parse parse) {
  const std::string original = ReadData(name);
  ASSERT_FALSE(original.empty()) << name;
  std::mt19937 random(1234);
  int accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    const absl::Status status = parse(Mutate(original, random));
    if (status.ok()) {
      ++accepted;
    } else {
      ASSERT_THAT(status.message(), HasSubstr("mutant")) << status;
    }
  }
  // Some mutants must be rejected, or the readers check nothing.
  EXPECT_LT(accepted, 3000) << name;
}

TEST(MutatedInputTest, PickleAndSnapshotReaders) {
  for (const char* name :
       {"snapshot_protocol2.pickle", "snapshot_protocol4.pickle"}) {
    FuzzFile(name, [](std::string bytes) {
      return ParsePytorchSnapshot(std::move(bytes), "mutant").status();
    });
  }
}

TEST(MutatedInputTest, TraceReader) {
  FuzzFile("snapshot_device0.trace", [](std::string text) {
    return ParseTrace(text, "mutant").status();
  });
}

TEST(MutatedInputTest, RmmLogReader) {
  FuzzFile("rmm_log.csv", [](std::string text) {
    return ParseRmmLog(text, "mutant").status();
  });
}

}  // namespace
}  // namespace tensormem
