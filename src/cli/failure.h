// The one way a `tensormem` command fails: a message on stderr naming the
// command, then the exit code (main.cc: 1 bad input or a failed run, 2 bad
// flags). Throwing instead of exiting lets main return, so stdout is flushed
// and destructors run.
#ifndef TENSORMEM_CLI_FAILURE_H_
#define TENSORMEM_CLI_FAILURE_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tensormem::cli {

inline constexpr int kBadInput = 1;  // bad input file or a failed run
inline constexpr int kBadFlags = 2;

// Prints "tensormem <command>: <message>" on stderr and ends the command.
[[noreturn]] void Fail(std::string_view command, int exit_code,
                       absl::string_view message);
// Fail with the status's message and kBadInput.
[[noreturn]] void Fail(std::string_view command, const absl::Status& status);

}  // namespace tensormem::cli

#endif  // TENSORMEM_CLI_FAILURE_H_
