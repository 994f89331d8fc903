// Writing a command's or a report's output: one function, so every writer
// names the path in its error and treats "-" as standard output.
//
//   TM_RETURN_IF_ERROR(WriteTextFile("plan.csv", FormatBufferSetCsv(set)));
//   TM_RETURN_IF_ERROR(WriteTextFile("-", csv));  // standard output
#ifndef TENSORMEM_CORE_FILE_IO_H_
#define TENSORMEM_CORE_FILE_IO_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace tensormem {

// Writes `text` to `path` (created or truncated, its folders made), or to
// standard output when `path` is "-" (then flushed). Errors name the path:
// InvalidArgument when it or its folder cannot be created, DataLoss when the
// write fails.
absl::Status WriteTextFile(const std::string& path, std::string_view text);

}  // namespace tensormem

#endif  // TENSORMEM_CORE_FILE_IO_H_
