// tensormem: deep-learning memory management from the command line.
//
// Exit codes: 0 success, 1 bad input or a failed run, 2 bad flags.
#include <cstdio>
#include <exception>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/commands.h"
#include "tensormem/core/version.h"
#include "tensormem/trace/replay_allocator.h"
#ifdef TENSORMEM_WITH_CUDA
#include "tensormem/cuda/cuda_sub_allocators.h"
#endif

int main(int argc, char** argv) {
  tensormem::KeepFreedHeapPagesForTiming();  // replay, bench, whatif time runs
  CLI::App app{
      "tensormem: allocate, plan, replay and measure deep-learning memory"};
  app.set_version_flag("--version",
                       "tensormem " + std::string(tensormem::kVersion));
  app.require_subcommand(1);
#ifdef TENSORMEM_WITH_CUDA
  // --sub-allocator cuda, cuda-vmm, ...; the driver is loaded on first use.
  tensormem::RegisterCudaSubAllocators();
#endif
  tensormem::cli::AddPlanCommand(app);
  tensormem::cli::AddArenaCommand(app);
  tensormem::cli::AddReplayCommand(app);
  tensormem::cli::AddReportCommand(app);
  tensormem::cli::AddBenchCommand(app);
  tensormem::cli::AddWhatIfCommand(app);
  tensormem::cli::AddConvertCommand(app);
#ifdef TENSORMEM_WITH_CUDA
  tensormem::cli::AddDevicesCommand(app);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a command already explained its failure
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints what was wrong with the flags
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensormem: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
