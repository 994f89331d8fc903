// Each subcommand of the `tensormem` binary registers itself on the app here.
// The commands stay thin: parse flags, call the library, print a report.
#ifndef TENSORMEM_CLI_COMMANDS_H_
#define TENSORMEM_CLI_COMMANDS_H_

#include <string>
#include <type_traits>

#include "CLI/CLI.hpp"

namespace tensormem::cli {

// A flag's former name, still accepted for one version and hidden from
// --help (docs/design.md, CLI surface).
template <typename T>
CLI::Option* AddFormerName(CLI::App& command, const std::string& name,
                           T& target) {
  CLI::Option* option;
  if constexpr (std::is_same_v<T, bool>) {
    option = command.add_flag(name, target);
  } else {
    option = command.add_option(name, target);
  }
  return option->group("");
}

// One line per subcommand; the implementations live in <name>_command.cc.
// (Subcommands are added here as they land.)
void AddConvertCommand(CLI::App& app);
void AddPlanCommand(CLI::App& app);
void AddArenaCommand(CLI::App& app);
void AddReplayCommand(CLI::App& app);
void AddReportCommand(CLI::App& app);
void AddBenchCommand(CLI::App& app);
void AddWhatIfCommand(CLI::App& app);
// Only in a build with the CUDA toolkit (TENSORMEM_WITH_CUDA).
void AddDevicesCommand(CLI::App& app);

}  // namespace tensormem::cli

#endif  // TENSORMEM_CLI_COMMANDS_H_
