// tensormem: deep-learning memory management from the command line.
#include <cstdio>

#include "CLI/CLI.hpp"
#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"tensormem: allocate, plan, replay and measure deep-learning memory"};
  app.set_version_flag("--version", "tensormem 0.1.0");
  app.require_subcommand(1);
  tensormem::cli::AddPlanCommand(app);
  tensormem::cli::AddArenaCommand(app);
  tensormem::cli::AddReplayCommand(app);
  tensormem::cli::AddReportCommand(app);
  tensormem::cli::AddBenchCommand(app);
  tensormem::cli::AddConvertCommand(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
