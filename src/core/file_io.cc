#include "tensormem/core/file_io.h"

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace tensormem {

absl::Status WriteTextFile(const std::string& path, std::string_view text) {
  const bool to_stdout = path == "-";
  // `--html out/page.html` from a fresh checkout: the folder is made, as
  // `bench --out` makes its own.
  const std::filesystem::path folder =
      std::filesystem::path(path).parent_path();
  std::error_code error;
  if (!to_stdout && !folder.empty() &&
      !std::filesystem::create_directories(folder, error) && error) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot create folder ", folder.string(), ": ",
                     error.message()));
  }
  std::FILE* out = to_stdout ? stdout : std::fopen(path.c_str(), "wb");
  if (out == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot open for writing"));
  }
  const bool written =
      std::fwrite(text.data(), 1, text.size(), out) == text.size();
  const bool closed = (to_stdout ? std::fflush(out) : std::fclose(out)) == 0;
  if (!written || !closed) {
    return absl::DataLossError(absl::StrCat(path, ": write failed"));
  }
  return absl::OkStatus();
}

}  // namespace tensormem
