// Third-party data the repository does not carry: MiniMalloc's and idealloc's
// buffer sets and real GPU snapshots live in ../shared/data beside the
// checkout (CMake's TENSORMEM_SHARED_DATA_DIR), or where the environment
// variable TENSORMEM_SHARED_DATA points. Tests that need a file skip, saying
// which, where it is absent (the benchmarks that read it use SharedDataDir):
//
//   TENSORMEM_SHARED_DATA_OR_SKIP(path, "minimalloc/examples/input.12.csv");
//   ReadBufferSetCsv(path);
#ifndef TENSORMEM_TESTS_SHARED_DATA_H_
#define TENSORMEM_TESTS_SHARED_DATA_H_

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace tensormem {

inline std::filesystem::path SharedDataDir() {
  const char* configured = std::getenv("TENSORMEM_SHARED_DATA");
  if (configured != nullptr && *configured != '\0') return configured;
  return TENSORMEM_SHARED_DATA_DIR;
}

// The file or folder under the shared data, or "" when it is absent.
inline std::string SharedDataPath(std::string_view relative) {
  const std::filesystem::path path = SharedDataDir() / relative;
  std::error_code error;
  return std::filesystem::exists(path, error) ? path.string() : std::string();
}

inline std::string SharedDataMissing(std::string_view relative) {
  return (SharedDataDir() / relative).string() +
         " is absent (third-party data, never copied into the repository; "
         "set TENSORMEM_SHARED_DATA to its folder)";
}

}  // namespace tensormem

// Declares `const std::string var`, the path of `relative` under the shared
// data, or skips the test (a macro because GTEST_SKIP returns from the test).
#define TENSORMEM_SHARED_DATA_OR_SKIP(var, relative)             \
  const std::string var = ::tensormem::SharedDataPath(relative); \
  if (var.empty()) GTEST_SKIP() << ::tensormem::SharedDataMissing(relative)

#endif  // TENSORMEM_TESTS_SHARED_DATA_H_
