// The optimal planner's judged benchmark (`solver_hard_benchmark --suite`):
// several hundred feasibility instances from three sources, split into a
// tuning half and a judging half by a fixed hash of each instance's name, so
// that a change tuned on one half is judged on instances it never saw
// (docs/solver.md, "The judged benchmark").
//
// Sources, each instance named "<source>/<set>/<seed>":
//   - generated: both families of hard_instances.h (MiniMalloc's generator
//     rules as its paper describes them, and the calibrated family);
//   - squeezed: real sets made tight (squeezed_instances.h): the project's
//     model buffer sets (data/models) and, where the shared data is present,
//     idealloc's sets of up to 2,000 buffers;
//   - minimalloc: MiniMalloc's published challenging sets, where present.
#ifndef TENSORMEM_BENCH_SOLVER_SUITE_H_
#define TENSORMEM_BENCH_SOLVER_SUITE_H_

#include <string>
#include <string_view>
#include <vector>

#include "plan/solver/hard_instances.h"

namespace tensormem {

struct SuiteInstance {
  std::string name;
  std::string source;  // "generated", "squeezed" or "minimalloc"
  bool judging = false;
  solver_internal::HardInstance hard;  // offsets empty when unknown
};

struct SuiteOptions {
  int generated_per_family = 100;
  int squeezes_per_set = 10;
  std::string data_dir;    // the repository's data/
  std::string shared_dir;  // ../shared/data; missing sets are left out
};

// Whether `name` belongs to the judging half: a fixed hash (FNV-1a with a
// final avalanche), so the halves never change with the machine, the order or
// the suite's size.
bool InJudgingHalf(std::string_view name);

// Every instance, generated in a fixed order; sets that cannot be read are
// named on stderr and left out.
std::vector<SuiteInstance> MakeSuite(const SuiteOptions& options);

// Writes each instance of the chosen halves as DIR/<half>/<name, '/' -> '_'>.
// <capacity>.csv (MiniMalloc's column layout and naming, for
// tools/solver_compare.py and other solvers). Errors name the file.
bool WriteSuite(const std::vector<SuiteInstance>& suite, const std::string& dir,
                bool tuning, bool judging);

struct SuiteRunOptions {
  double seconds = 2;  // wall limit per instance
  int threads = 2;
  bool tuning = true;  // which halves to run
  bool judging = true;
  bool verbose = false;  // a line per instance
};

// Runs the chosen halves and prints, per half and per source: instances,
// fits, fits within 1 CPU-second, and the median and worst wall time (an
// instance that does not fit counts at the limit, and the worst says so).
void RunSuite(const std::vector<SuiteInstance>& suite,
              const SuiteRunOptions& options);

}  // namespace tensormem

#endif  // TENSORMEM_BENCH_SOLVER_SUITE_H_
