#include "cli/failure.h"

#include <cstdio>

#include "CLI/CLI.hpp"

namespace tensormem::cli {

void Fail(std::string_view command, int exit_code, absl::string_view message) {
  std::fflush(stdout);  // what the command printed comes before the error
  std::fprintf(stderr, "tensormem %.*s: %.*s\n",
               static_cast<int>(command.size()), command.data(),
               static_cast<int>(message.size()), message.data());
  throw CLI::RuntimeError(exit_code);  // main returns exit_code
}

void Fail(std::string_view command, const absl::Status& status) {
  Fail(command, kBadInput, status.message());
}

}  // namespace tensormem::cli
