// Time per static-planning strategy vs number of buffers, on synthetic
// DNN-like buffer sets: a chain of operators whose outputs are read by the
// next one or two operators, with skip connections kept alive over a block,
// and a few long-lived buffers (weights gradients, caches).
//
//   build/<preset>/bench/plan_benchmark --benchmark_filter='best_fit_multi'
//
// Strategies whose registry estimate exceeds a few seconds at a size are
// skipped (reported as such), so the program always finishes in minutes.
#include <random>
#include <string>

#include "benchmark/benchmark.h"
#include "tensormem/plan/strategy_registry.h"

namespace tensormem {
namespace {

constexpr double kSkipAboveSeconds = 20;

BufferSet DnnLikeSet(int num_buffers, uint64_t seed) {
  std::mt19937_64 rng(seed);
  BufferSet set;
  set.convention = IntervalConvention::kClosed;
  int64_t op = 0;
  for (int i = 0; i < num_buffers; ++i) {
    Buffer b;
    b.id = i;
    const int kind = rng() % 20;
    int64_t lifetime = 1 + rng() % 2;          // read by the next op or two
    if (kind == 0) lifetime = 8 + rng() % 24;  // skip connection over a block
    if (kind == 1) lifetime = 200 + rng() % 800;  // long-lived
    b.lower = op;
    b.upper = op + lifetime + 1;
    // Activations: channels x spatial, powers of two times small factors.
    b.size = (1 + rng() % 8) * (uint64_t{1} << (10 + rng() % 12));
    set.buffers.push_back(b);
    op += rng() % 3 != 0;  // some ops produce two outputs
  }
  return set;
}

void BM_Strategy(benchmark::State& state, std::string name, PlanMode mode) {
  const BufferSet set = DnnLikeSet(static_cast<int>(state.range(0)), 42);
  const StrategyInfo* strategy = FindStrategy(name);
  absl::StatusOr<std::vector<UsageRecord<>>> records = ToUsageRecords(set);
  if (strategy == nullptr || !records.ok()) {
    state.SkipWithError("unknown strategy or bad set");
    return;
  }
  const double estimate =
      EstimateSeconds(*strategy, MeasureProblem(*records, mode));
  if (estimate > kSkipAboveSeconds) {
    state.SkipWithError(
        ("estimated " + std::to_string(static_cast<int>(estimate)) + " s")
            .c_str());
    return;
  }
  PlanOptions options;
  options.allow_slow = true;
  uint64_t total = 0;
  for (auto _ : state) {
    absl::StatusOr<PlanResult> plan = RunStrategy(name, set, mode, options);
    if (!plan.ok()) {
      state.SkipWithError(std::string(plan.status().message()).c_str());
      return;
    }
    total = plan->total_size;
    state.counters["ratio"] = plan->Ratio();
    state.counters["strategy_s"] = plan->seconds;
  }
  state.counters["total_mib"] = static_cast<double>(total) / (1 << 20);
  state.counters["estimate_s"] = estimate;
}

void RegisterAll() {
  struct Entry {
    const char* name;
    PlanMode mode;
  };
  const Entry entries[] = {
      {"naive", PlanMode::kObjects},
      {"equality", PlanMode::kObjects},
      {"greedy_in_order", PlanMode::kObjects},
      {"greedy_by_breadth", PlanMode::kObjects},
      {"greedy_by_size", PlanMode::kObjects},
      {"greedy_best", PlanMode::kObjects},
      {"min_cost_flow", PlanMode::kObjects},
      {"greedy_by_size", PlanMode::kOffsets},
      {"best_fit_multi", PlanMode::kOffsets},
  };
  for (const Entry& entry : entries) {
    const std::string label =
        std::string(entry.name) + "/" + std::string(PlanModeName(entry.mode));
    benchmark::RegisterBenchmark(label.c_str(), BM_Strategy,
                                 std::string(entry.name), entry.mode)
        ->Arg(1000)
        ->Arg(10000)
        ->Arg(100000)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
}

}  // namespace
}  // namespace tensormem

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  tensormem::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
