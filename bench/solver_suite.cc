#include "solver_suite.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <utility>

#include "plan/solver/squeezed_instances.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/solver/optimal_planner.h"

namespace tensormem {
namespace {

namespace fs = std::filesystem;
using solver_internal::HardInstance;

constexpr size_t kMaxSqueezedBuffers = 2000;
constexpr uint64_t kChallengingCapacity = 1048576;

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

void Add(std::vector<SuiteInstance>& suite, std::string name,
         std::string source, HardInstance hard) {
  const bool judging = InJudgingHalf(name);
  suite.push_back(
      {std::move(name), std::move(source), judging, std::move(hard)});
}

// The real sets to squeeze, named by their path under data/ or the shared
// data without ".csv": data/models/*.buffers.csv, then idealloc's.
std::vector<std::pair<std::string, BufferSet>> RealSets(
    const SuiteOptions& options) {
  std::vector<std::pair<std::string, std::string>> named_paths;
  std::error_code error;
  for (const auto& entry :
       fs::directory_iterator(fs::path(options.data_dir) / "models", error)) {
    const std::string file = entry.path().filename().string();
    if (file.ends_with(".buffers.csv")) {
      named_paths.emplace_back("models/" + file.substr(0, file.find('.')),
                               entry.path().string());
    }
  }
  std::sort(named_paths.begin(), named_paths.end());
  for (const std::string shared :
       {"idealloc/iree/iree_mobilenet", "idealloc/somas_tensors/resnet50",
        "idealloc/somas_tensors/tiny_bert", "idealloc/iopddl/G_1"}) {
    const fs::path path = fs::path(options.shared_dir) / (shared + ".csv");
    if (fs::exists(path, error)) named_paths.emplace_back(shared, path);
  }
  std::vector<std::pair<std::string, BufferSet>> sets;
  for (const auto& [name, path] : named_paths) {
    absl::StatusOr<BufferSet> set = ReadBufferSetCsv(path);
    if (!set.ok()) {
      std::fprintf(stderr, "suite: left out: %s\n",
                   std::string(set.status().message()).c_str());
    } else if (set->buffers.size() <= kMaxSqueezedBuffers) {
      sets.emplace_back(name, *std::move(set));
    }
  }
  return sets;
}

void AddChallenging(std::vector<SuiteInstance>& suite,
                    const std::string& shared_dir) {
  for (const char* name : {"A", "B", "C", "D", "E", "F"}) {
    const fs::path path = fs::path(shared_dir) / "minimalloc/challenging" /
                          (std::string(name) + ".1048576.csv");
    std::error_code error;
    if (!fs::exists(path, error)) continue;
    absl::StatusOr<BufferSet> set = ReadBufferSetCsv(path.string());
    if (!set.ok()) {
      std::fprintf(stderr, "suite: left out: %s\n",
                   std::string(set.status().message()).c_str());
      continue;
    }
    Add(suite, std::string("minimalloc/challenging/") + name, "minimalloc",
        {.set = *std::move(set),
         .offsets = {},
         .capacity = kChallengingCapacity});
  }
}

struct Outcome {
  bool fits = false;
  double wall = 0;
  double cpu = 0;
};

Outcome Solve(const SuiteInstance& instance, const SuiteRunOptions& options) {
  OptimalPlanOptions plan;
  plan.capacity = instance.hard.capacity;
  plan.time_limit_seconds = options.seconds;
  plan.threads = options.threads;
  const double cpu_start = CpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<OptimalPlanResult> result =
      PlanOptimal(instance.hard.set, plan);
  const std::chrono::duration<double> wall =
      std::chrono::steady_clock::now() - start;
  return {result.ok() && result->total_size <= instance.hard.capacity,
          wall.count(), CpuSeconds() - cpu_start};
}

struct Tally {
  std::vector<double> walls;  // an instance without a fit: the limit
  int fits = 0;
  int fits_within_one_cpu_second = 0;
};

void PrintTally(const std::string& label, Tally tally, double limit) {
  if (tally.walls.empty()) return;
  std::sort(tally.walls.begin(), tally.walls.end());
  const int missed = static_cast<int>(tally.walls.size()) - tally.fits;
  std::printf(
      "  %-24s %4zu instances  %4d fit  %4d within 1 CPU-s  wall median %.3f "
      "s  worst %s%.3f s\n",
      label.c_str(), tally.walls.size(), tally.fits,
      tally.fits_within_one_cpu_second, tally.walls[tally.walls.size() / 2],
      missed > 0 ? ">= " : "", missed > 0 ? limit : tally.walls.back());
}

}  // namespace

bool InJudgingHalf(std::string_view name) {
  uint64_t hash = 14695981039346656037ull;
  for (const char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  // FNV-1a alone barely mixes the last characters into any one bit (names
  // differ in their seeds): a final avalanche (MurmurHash3's) does.
  hash ^= hash >> 33;
  hash *= 0xff51afd7ed558ccdull;
  hash ^= hash >> 33;
  hash *= 0xc4ceb9fe1a85ec53ull;
  hash ^= hash >> 33;
  return hash & 1;
}

std::vector<SuiteInstance> MakeSuite(const SuiteOptions& options) {
  std::vector<SuiteInstance> suite;
  for (const bool calibrated : {false, true}) {
    const solver_internal::HardInstanceOptions family =
        calibrated ? solver_internal::CalibratedHardOptions()
                   : solver_internal::HardInstanceOptions{};
    for (int seed = 1; seed <= options.generated_per_family; ++seed) {
      Add(suite,
          std::string("generated/") +
              (calibrated ? "calibrated/" : "default/") + std::to_string(seed),
          "generated", solver_internal::MakeHardInstance(seed, family));
    }
  }
  for (const auto& [name, set] : RealSets(options)) {
    for (int seed = 1; seed <= options.squeezes_per_set; ++seed) {
      absl::StatusOr<HardInstance> hard =
          solver_internal::SqueezeRealSet(set, seed);
      if (hard.ok()) {
        Add(suite, "squeezed/" + name + "/" + std::to_string(seed), "squeezed",
            *std::move(hard));
      }
    }
  }
  AddChallenging(suite, options.shared_dir);
  return suite;
}

bool WriteSuite(const std::vector<SuiteInstance>& suite, const std::string& dir,
                bool tuning, bool judging) {
  for (const SuiteInstance& instance : suite) {
    if (instance.judging ? !judging : !tuning) continue;
    std::string file = instance.name;
    std::replace(file.begin(), file.end(), '/', '_');
    const fs::path folder =
        fs::path(dir) / (instance.judging ? "judging" : "tuning");
    std::error_code error;
    fs::create_directories(folder, error);
    const fs::path path =
        folder / (file + "." + std::to_string(instance.hard.capacity) + ".csv");
    std::ofstream out(path);
    out << FormatBufferSetCsv(instance.hard.set);
    if (!out.good()) {
      std::fprintf(stderr, "%s: cannot write\n", path.c_str());
      return false;
    }
  }
  return true;
}

void RunSuite(const std::vector<SuiteInstance>& suite,
              const SuiteRunOptions& options) {
  // half -> source ("all" too) -> tally
  std::map<std::string, std::map<std::string, Tally>> tallies;
  for (const SuiteInstance& instance : suite) {
    if (instance.judging ? !options.judging : !options.tuning) continue;
    const Outcome outcome = Solve(instance, options);
    const std::string half = instance.judging ? "judging" : "tuning";
    for (const std::string& source : {std::string("all"), instance.source}) {
      Tally& tally = tallies[half][source];
      tally.walls.push_back(outcome.fits ? outcome.wall : options.seconds);
      tally.fits += outcome.fits ? 1 : 0;
      tally.fits_within_one_cpu_second +=
          outcome.fits && outcome.cpu <= 1.0 ? 1 : 0;
    }
    if (options.verbose) {
      std::printf(
          "%-8s %-36s %5zu buffers  %s  wall %.3f s  cpu %.3f s\n",
          half.c_str(), instance.name.c_str(), instance.hard.set.buffers.size(),
          outcome.fits ? "fits  " : "no fit", outcome.wall, outcome.cpu);
    }
  }
  for (const auto& [half, by_source] : tallies) {
    std::printf("%s half (%.1f s wall, %d threads per instance):\n",
                half.c_str(), options.seconds, options.threads);
    PrintTally("all", by_source.at("all"), options.seconds);
    for (const auto& [source, tally] : by_source) {
      if (source != "all") PrintTally(source, tally, options.seconds);
    }
  }
}

}  // namespace tensormem
