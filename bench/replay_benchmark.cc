// Replay overhead per event over the bare allocator: the same BFC calls made
// by a minimal hand loop, by the timing pass (TimeReplay), and by the metrics
// pass (Replay) with and without timeline and placement recording.
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "tensormem/trace/replay.h"
#include "tensormem/trace/replay_allocator.h"

namespace tensormem {
namespace {

constexpr int kBlocks = 1 << 16;

// A training-step-like workload: blocks of 256 B .. 4 MiB, each freed after a
// random number of later allocations (at most 64 live at once).
const Trace& Workload() {
  static const Trace* trace = [] {
    auto* built = new Trace;
    std::mt19937_64 random(42);
    std::vector<uint64_t> live;
    for (uint64_t id = 0; id < kBlocks; ++id) {
      const uint64_t bytes = uint64_t{256} << (random() % 15);
      built->events.push_back(TraceEvent::Alloc(id, bytes + random() % bytes));
      live.push_back(id);
      if (live.size() > 64 || random() % 2 == 0) {
        const size_t victim = random() % live.size();
        built->events.push_back(TraceEvent::Free(live[victim]));
        live[victim] = live.back();
        live.pop_back();
      }
    }
    for (uint64_t id : live) built->events.push_back(TraceEvent::Free(id));
    return built;
  }();
  return *trace;
}

const PreparedTrace& Prepared() {
  static const PreparedTrace* prepared =
      new PreparedTrace(*PreparedTrace::Prepare(Workload()));
  return *prepared;
}

ReplayTarget FreshBfc() {
  AllocatorSpec spec;
  spec.policy = "tf";
  return *CreateReplayTarget(spec);
}

void BM_BareAllocatorLoop(benchmark::State& state) {
  const PreparedTrace& trace = Prepared();
  for (auto _ : state) {
    state.PauseTiming();
    ReplayTarget target = FreshBfc();
    std::vector<void*> blocks(trace.slot_count());
    state.ResumeTiming();
    Allocator& allocator = *target.allocator;
    for (const PreparedTrace::Step& step : trace.steps()) {
      if (step.op == PreparedTrace::Op::kAlloc) {
        blocks[step.slot] = allocator.Allocate(step.bytes);
      } else {
        allocator.Deallocate(blocks[step.slot]);
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * trace.steps().size());
}
BENCHMARK(BM_BareAllocatorLoop)->Unit(benchmark::kMillisecond);

void BM_TimingPass(benchmark::State& state) {
  const PreparedTrace& trace = Prepared();
  for (auto _ : state) {
    state.PauseTiming();
    ReplayTarget target = FreshBfc();
    ReplayMetrics metrics;
    state.ResumeTiming();
    TimeReplay(trace, target, metrics);
  }
  state.SetItemsProcessed(state.iterations() * trace.steps().size());
}
BENCHMARK(BM_TimingPass)->Unit(benchmark::kMillisecond);

void BM_MetricsPass(benchmark::State& state) {
  const PreparedTrace& trace = Prepared();
  const ReplayOptions options{
      .record_placement = state.range(0) != 0,
      .max_timeline_samples = state.range(0) != 0 ? 2000u : 0u};
  for (auto _ : state) {
    state.PauseTiming();
    ReplayTarget target = FreshBfc();
    state.ResumeTiming();
    benchmark::DoNotOptimize(Replay(trace, target, options));
  }
  state.SetItemsProcessed(state.iterations() * trace.steps().size());
}
BENCHMARK(BM_MetricsPass)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_Prepare(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(PreparedTrace::Prepare(Workload()));
  state.SetItemsProcessed(state.iterations() * Workload().events.size());
}
BENCHMARK(BM_Prepare)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tensormem

BENCHMARK_MAIN();
