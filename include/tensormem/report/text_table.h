// A table as aligned plain text, for terminal output: the first column
// left-aligned, the others right-aligned, two spaces between columns.
//
//   std::printf("%s", FormatTextTable({{"name", "bytes"}, {"a",
//   "12"}}).c_str());
#ifndef TENSORMEM_REPORT_TEXT_TABLE_H_
#define TENSORMEM_REPORT_TEXT_TABLE_H_

#include <string>
#include <vector>

namespace tensormem {

// One line per row (header first, if any), each ending in a newline.
std::string FormatTextTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace tensormem

#endif  // TENSORMEM_REPORT_TEXT_TABLE_H_
