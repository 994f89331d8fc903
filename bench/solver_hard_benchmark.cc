// The optimal planner on generated hard instances (MiniMalloc challenging
// style: a 1 MiB x 1M-step rectangle tiled by random buffers, then thinned,
// with the lower bound equal to the capacity). Each instance is a feasibility
// question at that capacity; the summary says how many fit, and how many
// within 1 CPU-second.
//
//   ./bench/solver_hard_benchmark --count 200 --seconds 3
//   ./bench/solver_hard_benchmark --count 200 --write /tmp/hard  # CSVs too
//   ./bench/solver_hard_benchmark --count 200 --write /tmp/hard --stats
//   ./bench/solver_hard_benchmark --family calibrated --stats
//   ./bench/solver_hard_benchmark --suite --half judging --seconds 2 --threads
//   2
//
// Flags: --count N (100), --first-seed S (1), --seconds T (wall limit per
// instance, 3), --cpu-seconds C (also stop each instance after C CPU-seconds,
// so a loaded machine does not shorten the search: use --seconds large),
// --threads K (1), --write DIR (also write DIR/hard_<seed>.csv in MiniMalloc's
// column layout, for other solvers), --verbose (a line per instance),
// --family default|calibrated (CalibratedHardOptions: fitted to the
// challenging sets' statistics), --stats (per instance: buffers, sections,
// full sections, fill; no search; with --write: write the CSVs only). CPU
// seconds come from getrusage, so they add up all threads. --suite runs the
// judged benchmark instead (solver_suite.h; --half tuning|judging|both, with
// --seconds, --threads and --verbose; --count is the instances per generated
// family; --write DIR writes the instances instead of running them); the
// shared data is read from TENSORMEM_SHARED_DATA if set.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "plan/solver/hard_instances.h"
#include "plan/solver/problem.h"
#include "shared_data.h"
#include "solver_suite.h"
#include "tensormem/plan/solver/optimal_planner.h"

namespace tensormem {
namespace {

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

struct Flags {
  int count = 100;
  uint64_t first_seed = 1;
  double seconds = 3;
  double cpu_seconds = 0;  // 0: no CPU limit
  int threads = 1;
  std::string write_dir;
  bool verbose = false;
  bool stats = false;
  bool calibrated = false;
  bool suite = false;
  std::string half = "both";
};

bool ParseFlags(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--verbose") {
      flags.verbose = true;
    } else if (flag == "--stats") {
      flags.stats = true;
    } else if (flag == "--suite") {
      flags.suite = true;
    } else if (flag == "--half" && has_value) {
      flags.half = argv[++i];
      if (flags.half != "tuning" && flags.half != "judging" &&
          flags.half != "both") {
        std::fprintf(stderr, "--half: tuning, judging or both, not %s\n",
                     flags.half.c_str());
        return false;
      }
    } else if (flag == "--family" && has_value) {
      const std::string family = argv[++i];
      if (family != "default" && family != "calibrated") {
        std::fprintf(stderr, "--family: default or calibrated, not %s\n",
                     family.c_str());
        return false;
      }
      flags.calibrated = family == "calibrated";
    } else if (flag == "--count" && has_value) {
      flags.count = std::atoi(argv[++i]);
    } else if (flag == "--first-seed" && has_value) {
      flags.first_seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (flag == "--seconds" && has_value) {
      flags.seconds = std::atof(argv[++i]);
    } else if (flag == "--cpu-seconds" && has_value) {
      flags.cpu_seconds = std::atof(argv[++i]);
    } else if (flag == "--threads" && has_value) {
      flags.threads = std::atoi(argv[++i]);
    } else if (flag == "--write" && has_value) {
      flags.write_dir = argv[++i];
    } else {
      std::fprintf(stderr, "unknown flag or missing value: %s\n", argv[i]);
      return false;
    }
  }
  return flags.count > 0 && flags.seconds > 0 && flags.cpu_seconds >= 0 &&
         flags.threads > 0;
}

// Buffers, sections, sections exactly at the capacity, and the share of the
// capacity x time rectangle the buffers fill: the statistics the challenging
// sets are described by.
void PrintStats(uint64_t seed, const solver_internal::HardInstance& hard) {
  absl::StatusOr<solver_internal::Problem> problem =
      solver_internal::BuildProblem(hard.set, 1);
  if (!problem.ok()) return;
  int full = 0;
  for (const uint64_t live : problem->section_total)
    full += live == hard.capacity ? 1 : 0;
  int64_t first = INT64_MAX, last = INT64_MIN;
  double area = 0;
  for (const Buffer& b : hard.set.buffers) {
    first = std::min(first, b.lower);
    last = std::max(last, b.upper);
    area +=
        static_cast<double>(b.size) * static_cast<double>(b.upper - b.lower);
  }
  std::printf("seed %llu buffers %zu sections %d full %d fill %.3f\n",
              static_cast<unsigned long long>(seed), hard.set.buffers.size(),
              problem->num_sections, full,
              area / (static_cast<double>(hard.capacity) *
                      static_cast<double>(last - first)));
}

// DIR/hard_<seed>.csv; a directory that cannot be written is an error.
bool WriteInstance(const std::string& dir, uint64_t seed,
                   const solver_internal::HardInstance& hard) {
  const std::string path = dir + "/hard_" + std::to_string(seed) + ".csv";
  std::ofstream out(path);
  out << FormatBufferSetCsv(hard.set);
  if (out.good()) return true;
  std::fprintf(stderr, "%s: cannot write (does the directory exist?)\n",
               path.c_str());
  return false;
}

int RunJudgedSuite(const Flags& flags) {
  const std::vector<SuiteInstance> suite =
      MakeSuite({.generated_per_family = flags.count,
                 .data_dir = TENSORMEM_DATA_DIR,
                 .shared_dir = SharedDataDir().string()});
  const bool tuning = flags.half != "judging", judging = flags.half != "tuning";
  if (!flags.write_dir.empty())
    return WriteSuite(suite, flags.write_dir, tuning, judging) ? 0 : 1;
  RunSuite(suite, {.seconds = flags.seconds,
                   .threads = flags.threads,
                   .tuning = tuning,
                   .judging = judging,
                   .verbose = flags.verbose});
  return 0;
}

int Run(const Flags& flags) {
  if (flags.suite) return RunJudgedSuite(flags);
  const solver_internal::HardInstanceOptions family =
      flags.calibrated ? solver_internal::CalibratedHardOptions()
                       : solver_internal::HardInstanceOptions{};
  int fits = 0, fits_in_one_second = 0;
  std::vector<double> cpu_of_fits;
  double total_cpu = 0;
  uint64_t total_nodes = 0;
  for (int k = 0; k < flags.count; ++k) {
    const uint64_t seed = flags.first_seed + k;
    const solver_internal::HardInstance hard =
        solver_internal::MakeHardInstance(seed, family);
    if (!flags.write_dir.empty() && !WriteInstance(flags.write_dir, seed, hard))
      return 1;
    if (flags.stats) {
      PrintStats(seed, hard);
      continue;
    }
    OptimalPlanOptions options;
    options.capacity = hard.capacity;
    options.time_limit_seconds = flags.seconds;
    options.threads = flags.threads;
    const double cpu_start = CpuSeconds();
    std::atomic<bool> cancel{false};
    options.cancel = &cancel;
    std::atomic<bool> done{false};
    std::thread watchdog([&] {
      while (flags.cpu_seconds > 0 && !done.load()) {
        if (CpuSeconds() - cpu_start > flags.cpu_seconds) cancel.store(true);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
    absl::StatusOr<OptimalPlanResult> result = PlanOptimal(hard.set, options);
    done.store(true);
    watchdog.join();
    const double cpu = CpuSeconds() - cpu_start;
    total_cpu += cpu;
    const uint64_t nodes = result.ok() ? result->nodes : 0;
    total_nodes += nodes;
    if (result.ok()) {
      ++fits;
      cpu_of_fits.push_back(cpu);
      if (cpu <= 1.0) ++fits_in_one_second;
    }
    if (flags.verbose) {
      std::printf("seed %llu buffers %zu %s cpu %.3f s nodes %llu\n",
                  static_cast<unsigned long long>(seed),
                  hard.set.buffers.size(), result.ok() ? "fits" : "no fit", cpu,
                  static_cast<unsigned long long>(nodes));
    }
  }
  std::sort(cpu_of_fits.begin(), cpu_of_fits.end());
  auto quantile = [&](double q) {
    return cpu_of_fits.empty()
               ? 0.0
               : cpu_of_fits[static_cast<size_t>(q * (cpu_of_fits.size() - 1))];
  };
  std::printf(
      "instances %d  fits %d  fits within 1 CPU-s %d  total CPU %.1f s  "
      "CPU of fits: median %.3f s, p90 %.3f s, max %.3f s  nodes of fits "
      "%llu\n",
      flags.count, fits, fits_in_one_second, total_cpu, quantile(0.5),
      quantile(0.9), quantile(1.0),
      static_cast<unsigned long long>(total_nodes));
  return 0;
}

}  // namespace
}  // namespace tensormem

int main(int argc, char** argv) {
  tensormem::Flags flags;
  if (!tensormem::ParseFlags(argc, argv, flags)) {
    std::fprintf(stderr,
                 "usage: solver_hard_benchmark [--count N] [--first-seed S] "
                 "[--seconds T] [--cpu-seconds C] [--threads K] [--write DIR] "
                 "[--verbose] [--stats] [--family default|calibrated] "
                 "[--suite [--half tuning|judging|both]]\n");
    return 2;
  }
  return tensormem::Run(flags);
}
