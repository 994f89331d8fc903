// The BFC allocator's cost per operation and its thread scaling.
//
// Replay: the replay loop (trace parsed and prepared first, allocator warmed
// by one pass) over five real training traces and a synthetic 1M-event
// training trace, for the `tf`, `tight` and `planned` policies (`planned`
// timed once its plan serves: each pass is an iteration of a loop); ns/op is
// the CPU time per allocation or free. Cold: one pass from a new allocator each
// time (growth included, as the policy table of `bench --policies` times it).
// Threads: 1, 2 and 4 threads each replaying their own stream into ONE
// allocator; compare items_per_second (wall time) across thread counts.
// Threads/<policy>-sharded: the same into a sharded allocator of 4 shards (each
// thread its own), with the memory held (peak_pool_MiB).
//
//   bfc_speed_benchmark --benchmark_filter='Replay/tf'
//   bfc_speed_benchmark --count=synthetic --policy=tf   # for callgrind
//
// --count runs one warm pass, then --passes (default 1) passes inside
// CountedPasses, and prints the operations made: tools/bfc_instructions.py
// runs it under callgrind, collecting inside CountedPasses only. With --cold
// the counted pass is the first, from an empty allocator.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "bfc_speed_workloads.h"
#include "bfc_thread_workloads.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/planned_allocator.h"
#include "tensormem/trace/replay_allocator.h"

namespace tensormem::bench {
namespace {

constexpr uint64_t kCapacity = 64 * kGiB;

const PreparedTrace& Workload(const std::string& name) {
  static std::mutex mutex;
  static auto* cache = new std::map<std::string, PreparedTrace>;
  std::lock_guard lock(mutex);
  auto it = cache->find(name);
  if (it == cache->end()) {
    it = cache
             ->emplace(name,
                       name == "synthetic"
                           ? PrepareOrDie(SyntheticTrainingTrace(), "synthetic")
                           : LoadRealTrace(name))
             .first;
  }
  return it->second;
}

void SetPerOpCounters(benchmark::State& state, int64_t operations) {
  state.SetItemsProcessed(operations);
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(operations) * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// The planned policy is timed once its plan serves (each pass is one
// iteration of a loop): passes until it has served two, for at most 30 s. In
// the background the learner takes a fraction of a second to plan (its
// search alone 0.25 s), hundreds of passes of a real trace: a pass count
// would time the learning calls instead. Returns the planned allocator, or
// nullptr for other policies.
PlannedAllocator* WarmUntilPlanned(const PreparedTrace& trace,
                                   Allocator& allocator,
                                   std::vector<void*>& blocks) {
  auto* planned = dynamic_cast<PlannedAllocator*>(&allocator);
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (planned != nullptr && planned->loop_status().planned_iterations < 2 &&
         std::chrono::steady_clock::now() < give_up) {
    ReplayPass(trace, allocator, blocks);
  }
  return planned;
}

void BM_Replay(benchmark::State& state, std::string policy,
               std::string workload) {
  const PreparedTrace& trace = Workload(workload);
  std::unique_ptr<Allocator> allocator = MakeSpeedAllocator(policy, kCapacity);
  std::vector<void*> blocks(trace.slot_count(), nullptr);
  ReplayPass(trace, *allocator, blocks);  // warm: regions exist
  auto* planned = WarmUntilPlanned(trace, *allocator, blocks);
  int64_t operations = 0;
  for (auto _ : state) operations += ReplayPass(trace, *allocator, blocks);
  SetPerOpCounters(state, operations);
  if (planned != nullptr) {
    const PlannedAllocator::LoopStatus status = planned->loop_status();
    state.counters["serving"] = status.serving ? 1 : 0;
    state.counters["mismatches"] = static_cast<double>(status.mismatches);
  }
}

// One pass from a new, empty allocator, as the policy table times it: growth
// and the first use of every region included.
void BM_ColdReplay(benchmark::State& state, std::string policy,
                   std::string workload) {
  const PreparedTrace& trace = Workload(workload);
  std::vector<void*> blocks(trace.slot_count(), nullptr);
  int64_t operations = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<Allocator> allocator =
        MakeSpeedAllocator(policy, kCapacity);
    state.ResumeTiming();
    operations += ReplayPass(trace, *allocator, blocks);
    state.PauseTiming();
    allocator.reset();
    state.ResumeTiming();
  }
  SetPerOpCounters(state, operations);
}

// One allocator per (policy, shards, workload, thread count), shared by the
// threads.
Allocator& SharedAllocator(const std::string& key, const std::string& policy,
                           int shards) {
  static std::mutex mutex;
  static auto* allocators =
      new std::map<std::string, std::unique_ptr<Allocator>>;
  std::lock_guard lock(mutex);
  std::unique_ptr<Allocator>& allocator = (*allocators)[key];
  if (allocator == nullptr)
    allocator = MakeSpeedAllocator(policy, kCapacity, shards);
  return *allocator;
}

// Every thread replays its own copy of `workload` into one allocator (with
// `shards` > 1: one sharded allocator). peak_pool_MiB: memory held at the
// peak, summed over shards.
void BM_Threads(benchmark::State& state, std::string policy,
                std::string workload, int shards) {
  const PreparedTrace& trace = Workload(workload);
  Allocator& allocator = SharedAllocator(
      absl::StrCat(policy, "/", shards, "/", workload, "/", state.threads()),
      policy, shards);
  std::vector<void*> blocks(trace.slot_count(), nullptr);
  ReplayPass(trace, allocator, blocks);  // warm, before the timed barrier
  auto* bfc = dynamic_cast<BfcAllocator*>(&allocator);
  const FutexMutex::Contention before =
      bfc != nullptr ? bfc->LockContention() : FutexMutex::Contention{};
  int64_t operations = 0;
  for (auto _ : state) operations += ReplayPass(trace, allocator, blocks);
  state.SetItemsProcessed(operations);
  if (bfc != nullptr && state.thread_index() == 0) {
    // Over all threads' operations (each thread made about as many); only
    // one thread sets a counter, since counters are summed over threads.
    const FutexMutex::Contention after = bfc->LockContention();
    const double ops =
        static_cast<double>(std::max<int64_t>(operations, 1)) * state.threads();
    state.counters["contended_per_op"] =
        static_cast<double>(after.contended - before.contended) / ops;
    state.counters["parked_per_op"] =
        static_cast<double>(after.parked - before.parked) / ops;
    state.counters["handoffs_per_op"] =
        static_cast<double>(after.handoffs - before.handoffs) / ops;
  }
  if (state.thread_index() == 0) {
    // Counters are summed over threads: only one sets it.
    const AllocatorStats stats = *allocator.GetStats();
    state.counters["peak_pool_MiB"] =
        static_cast<double>(stats.peak_pool_bytes) / kMiB;
  }
}

// The memory baseline of Threads/: `streams` copies of the workload replayed
// by one thread, interleaved step by step, into one allocator.
void BM_Interleaved(benchmark::State& state, std::string policy,
                    std::string workload) {
  const PreparedTrace& trace = Workload(workload);
  std::unique_ptr<Allocator> allocator = MakeSpeedAllocator(policy, kCapacity);
  std::vector<std::vector<void*>> blocks(
      state.range(0), std::vector<void*>(trace.slot_count(), nullptr));
  int64_t operations = 0;
  for (auto _ : state) operations += InterleavedPass(trace, *allocator, blocks);
  state.SetItemsProcessed(operations);
  state.counters["peak_pool_MiB"] =
      static_cast<double>(allocator->GetStats()->peak_pool_bytes) / kMiB;
}

// Blocks allocated by one thread and freed by another.
void BM_ProducerConsumer(benchmark::State& state, std::string policy,
                         std::string workload) {
  const PreparedTrace& trace = Workload(workload);
  std::unique_ptr<Allocator> allocator = MakeSpeedAllocator(policy, kCapacity);
  int64_t operations = 0;
  for (auto _ : state)
    operations += ProducerConsumerPass(trace, *allocator, /*in_flight=*/64);
  state.SetItemsProcessed(operations);
  state.counters["peak_pool_MiB"] =
      static_cast<double>(allocator->GetStats()->peak_pool_bytes) / kMiB;
}

void RegisterAll() {
  std::vector<std::string> workloads = RealTraceNames();
  workloads.push_back("synthetic");
  for (const char* policy : {"tf", "tight", "pytorch"}) {
    for (const char* workload : {"synthetic", "resnet50"}) {
      benchmark::RegisterBenchmark(
          absl::StrCat("Interleaved/", policy, "/", workload).c_str(),
          BM_Interleaved, policy, workload)
          ->Arg(1)
          ->Arg(2)
          ->Arg(4)
          ->ArgName("streams");
      benchmark::RegisterBenchmark(
          absl::StrCat("ProducerConsumer/", policy, "/", workload).c_str(),
          BM_ProducerConsumer, policy, workload)
          ->UseRealTime();
      for (int shards : {1, 4}) {
        benchmark::RegisterBenchmark(
            absl::StrCat("Threads/", policy, shards > 1 ? "-sharded" : "", "/",
                         workload)
                .c_str(),
            BM_Threads, policy, workload, shards)
            ->Threads(1)
            ->Threads(2)
            ->Threads(4)
            ->UseRealTime();
      }
    }
  }
  for (const char* policy : {"tf", "tight", "planned"}) {
    for (const std::string& workload : workloads) {
      benchmark::RegisterBenchmark(
          ("Replay/" + std::string(policy) + "/" + workload).c_str(), BM_Replay,
          policy, workload);
      if (std::string_view(policy) == "planned") continue;
      benchmark::RegisterBenchmark(
          ("Cold/" + std::string(policy) + "/" + workload).c_str(),
          BM_ColdReplay, policy, workload);
    }
  }
}

// One stream replayed, or several interleaved.
int64_t StreamsPass(const PreparedTrace& trace, Allocator& allocator,
                    std::vector<std::vector<void*>>& blocks) {
  return blocks.size() == 1 ? ReplayPass(trace, allocator, blocks[0])
                            : InterleavedPass(trace, allocator, blocks);
}

[[gnu::noinline]] int64_t CountedPasses(const PreparedTrace& trace,
                                        Allocator& allocator,
                                        std::vector<std::vector<void*>>& blocks,
                                        int passes) {
  int64_t operations = 0;
  for (int p = 0; p < passes; ++p)
    operations += StreamsPass(trace, allocator, blocks);
  return operations;
}

// --count=<workload> [--policy=tf] [--passes=1] [--streams=1] [--cold]:
// small reservations, so the run suits valgrind. More than one stream
// replays that many copies of the workload interleaved (Interleaved/); the
// planned policy is warmed until its plan serves with one stream only.
int CountMode(int argc, char** argv) {
  std::string workload, policy = "tf";
  int passes = 1;
  int streams = 1;
  bool cold = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--count=", 0) == 0)
      workload = arg.substr(8);
    else if (arg.rfind("--policy=", 0) == 0)
      policy = arg.substr(9);
    else if (arg.rfind("--passes=", 0) == 0)
      passes = std::atoi(arg.c_str() + 9);
    else if (arg.rfind("--streams=", 0) == 0)
      streams = std::atoi(arg.c_str() + 10);
    else if (arg == "--cold")
      cold = true;
    else {
      std::fprintf(stderr, "unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  if (passes < 1 || streams < 1) {
    std::fprintf(stderr, "--passes and --streams must be at least 1\n");
    return 2;
  }
  const PreparedTrace& trace = Workload(workload);
  std::unique_ptr<Allocator> allocator = MakeSpeedAllocator(policy, 8 * kGiB);
  std::vector<std::vector<void*>> blocks(
      streams, std::vector<void*>(trace.slot_count(), nullptr));
  if (!cold) {
    StreamsPass(trace, *allocator, blocks);
    if (streams == 1) WarmUntilPlanned(trace, *allocator, blocks[0]);
  }
  const int64_t operations = CountedPasses(trace, *allocator, blocks, passes);
  std::printf("operations %lld\n", static_cast<long long>(operations));
  return 0;
}

}  // namespace
}  // namespace tensormem::bench

int main(int argc, char** argv) {
  tensormem::KeepFreedHeapPagesForTiming();  // Cold: a new allocator per pass
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--count=", 8) == 0)
      return tensormem::bench::CountMode(argc, argv);
  }
  tensormem::bench::RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
