#include "cli/cli_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tensormem::testing {

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string FreshDirectory(const std::string& name) {
  // CTest runs test processes in parallel: each process gets its own tree.
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("tensormem_test_" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path.string();
}

CommandOutput RunTensormem(const std::string& arguments) {
  return RunTensormemIn(TENSORMEM_SOURCE_DIR, arguments);
}

CommandOutput RunTensormemIn(const std::string& directory,
                             const std::string& arguments) {
  const std::string scratch = FreshDirectory("cli_run");
  const std::string out_path = scratch + "/stdout",
                    err_path = scratch + "/stderr";
  const std::string command = "cd " + directory + " && " TENSORMEM_BINARY " " +
                              arguments + " >" + out_path + " 2>" + err_path;
  const int status = std::system(command.c_str());
  CommandOutput output;
  output.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  output.out = ReadFileOrEmpty(out_path);
  output.err = ReadFileOrEmpty(err_path);
  return output;
}

}  // namespace tensormem::testing
