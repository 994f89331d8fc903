// Runs the built `tensormem` binary and captures what it printed.
#ifndef TENSORMEM_TESTS_CLI_CLI_RUNNER_H_
#define TENSORMEM_TESTS_CLI_CLI_RUNNER_H_

#include <string>

namespace tensormem::testing {

struct CommandOutput {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `tensormem <arguments>` (a shell-quoted string) from the source tree.
CommandOutput RunTensormem(const std::string& arguments);
// The same from `directory` (where relative output paths then land).
CommandOutput RunTensormemIn(const std::string& directory,
                             const std::string& arguments);

// A fresh empty directory under the test's temporary directory.
std::string FreshDirectory(const std::string& name);

std::string ReadFileOrEmpty(const std::string& path);

}  // namespace tensormem::testing

#endif  // TENSORMEM_TESTS_CLI_CLI_RUNNER_H_
