// The optimal planner on the public sets of the shared data (never copied
// into the repository: TENSORMEM_SHARED_DATA_DIR, or the environment variable
// TENSORMEM_SHARED_DATA).
//
//   Challenging/<X>: MiniMalloc's challenging instances, feasibility at
//     capacity 1,048,576 (one thread); counters: nodes, fits, cpu_s (process
//     CPU seconds: kept searches run on threads of their own).
//   Minimise/<set>: minimisation with a time limit (default 10 s, env
//     TENSORMEM_SOLVER_SECONDS); counters: greedy and final ratio to the
//     lower bound, proven optimal, seconds to the best plan, nodes.
//
// Each case runs once (the answer, not the variance, is what is measured).
// Run from anywhere: the shared data's folder is compiled in.
//   ./bench/solver_benchmark --benchmark_filter=Challenging
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "benchmark/benchmark.h"
#include "shared_data.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/solver/optimal_planner.h"

namespace tensormem {
namespace {

BufferSet Load(const std::string& relative) {
  absl::StatusOr<BufferSet> set =
      ReadBufferSetCsv((SharedDataDir() / relative).string());
  if (!set.ok()) {
    std::fprintf(stderr, "%s (the shared data: set TENSORMEM_SHARED_DATA)\n",
                 std::string(set.status().message()).c_str());
    std::exit(1);
  }
  for (Buffer& b : set->buffers) b.offset.reset();
  return *set;
}

// Process CPU time: the search may run on threads other than the caller's.
double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

void Challenging(benchmark::State& state, const std::string& path) {
  const BufferSet set = Load(path);
  OptimalPlanOptions options;
  options.capacity = 1048576;
  options.time_limit_seconds = 120;
  for (auto _ : state) {
    const double cpu_start = ProcessCpuSeconds();
    absl::StatusOr<OptimalPlanResult> result = PlanOptimal(set, options);
    state.counters["cpu_s"] = ProcessCpuSeconds() - cpu_start;
    state.counters["fits"] = result.ok() ? 1 : 0;
    state.counters["nodes"] = result.ok() ? result->nodes : 0;
    state.counters["buffers"] = set.buffers.size();
    if (!result.ok())
      state.SkipWithError(std::string(result.status().message()).c_str());
  }
}

void Minimise(benchmark::State& state, const std::string& path) {
  const BufferSet set = Load(path);
  OptimalPlanOptions options;
  const char* seconds = std::getenv("TENSORMEM_SOLVER_SECONDS");
  options.time_limit_seconds = seconds != nullptr ? std::atof(seconds) : 10;
  for (auto _ : state) {
    absl::StatusOr<OptimalPlanResult> result = PlanOptimal(set, options);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      break;
    }
    const double bound = static_cast<double>(PeakLiveBytes(set));
    state.counters["buffers"] = set.buffers.size();
    state.counters["greedy_ratio"] = result->start_size / bound;
    state.counters["ratio"] = result->total_size / bound;
    state.counters["proven"] = result->proven_optimal ? 1 : 0;
    state.counters["to_best_s"] = result->seconds_to_best;
    state.counters["nodes"] = result->nodes;
  }
}

int RegisterAll() {
  for (const char* name : {"A", "B", "C", "D", "E", "F"}) {
    benchmark::RegisterBenchmark(
        (std::string("Challenging/") + name).c_str(), Challenging,
        std::string("minimalloc/challenging/") + name + ".1048576.csv")
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  for (const char* path :
       {"idealloc/iree/iree_mobilenet.csv",
        "idealloc/somas_tensors/resnet50.csv",
        "idealloc/somas_tensors/tiny_bert.csv",
        "idealloc/somas_tensors/bert_base.csv", "idealloc/iopddl/G_1.csv",
        "idealloc/iopddl/S_1.csv"}) {
    benchmark::RegisterBenchmark((std::string("Minimise/") + path).c_str(),
                                 Minimise, std::string(path))
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  return 0;
}

const int registered = RegisterAll();

}  // namespace
}  // namespace tensormem

BENCHMARK_MAIN();
