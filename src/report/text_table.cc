#include "tensormem/report/text_table.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace tensormem {

std::string FormatTextTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c)
      widths[c] = std::max(widths[c], row[c].size());
  }
  std::string text;
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      const int width = static_cast<int>(widths[c]);
      if (c == 0) {
        absl::StrAppendFormat(&text, "%-*s", width, row[c]);
      } else {
        absl::StrAppendFormat(&text, "  %*s", width, row[c]);
      }
    }
    text += "\n";
  }
  return text;
}

}  // namespace tensormem
