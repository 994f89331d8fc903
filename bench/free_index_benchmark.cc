// Free-index throughput on its own: the fast index against the TensorFlow-style
// reference index (per-bin std::set, linear scan).
//
// Each workload runs once through a BFC allocator whose index records every
// call the allocator makes (insert, erase, best-fit query, with the answer).
// The benchmark then replays that call stream against a fresh index of each
// kind, checking every answer against the recorded one, so both indexes do
// exactly the work the allocator asked for and give the same answers. What the
// allocator does around the index (lock, pointer map, chunk bookkeeping) is
// the same for both and left out here; bfc_benchmark measures it too.
//
//   free_index_benchmark --benchmark_filter=Delayed
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alloc/reference_free_index.h"
#include "benchmark/benchmark.h"
#include "bfc_workloads.h"
#include "tensormem/alloc/bfc_free_index.h"

namespace tensormem {
namespace {

struct IndexCall {
  enum Kind : uint8_t { kInsert, kErase, kFind };
  Kind kind;
  FreeChunkKey key;        // kFind: key.size is the minimum size
  uint64_t found_address;  // kFind: the answer's address, kNoFit if none
};

constexpr uint64_t kNoFit = UINT64_MAX;

// Forwards to a fast index and records the calls the allocator's hot path
// makes. Filtered queries cannot be replayed; none of the workloads here
// filters (no alignment above 256, no timestamps), which `filtered` confirms.
class RecordingIndex final : public BfcFreeIndex {
 public:
  explicit RecordingIndex(std::vector<IndexCall>& calls) : calls_(calls) {}

  std::string Name() const override { return "recording"; }
  void Insert(const FreeChunkKey& key) override {
    calls_.push_back({IndexCall::kInsert, key, 0});
    inner_->Insert(key);
  }
  bool Erase(const FreeChunkKey& key) override {
    calls_.push_back({IndexCall::kErase, key, 0});
    return inner_->Erase(key);
  }
  bool Contains(const FreeChunkKey& key) const override {
    return inner_->Contains(key);
  }
  size_t Size() const override { return inner_->Size(); }
  std::optional<FreeChunkKey> FindBestFit(uint64_t min_size) const override {
    std::optional<FreeChunkKey> fit = inner_->FindBestFit(min_size);
    calls_.push_back(
        {IndexCall::kFind, {min_size, 0, 0}, fit ? fit->address : kNoFit});
    return fit;
  }
  std::optional<FreeChunkKey> FindBestFitIf(uint64_t min_size,
                                            Filter accept) const override {
    filtered = true;
    return inner_->FindBestFitIf(min_size, accept);
  }
  std::optional<FreeChunkKey> Largest() const override {
    return inner_->Largest();
  }

  mutable bool filtered = false;

 private:
  std::vector<IndexCall>& calls_;
  std::unique_ptr<BfcFreeIndex> inner_ = MakeFastFreeIndex();
};

// Runs `workload` on an allocator with a recording index.
template <typename Workload>
std::vector<IndexCall> Record(Workload workload, uint64_t limit = 16 * kGiB) {
  std::vector<IndexCall> calls;
  auto index = std::make_unique<RecordingIndex>(calls);
  const RecordingIndex* recorder = index.get();
  {
    std::unique_ptr<BfcAllocator> allocator =
        bench::MakeBenchAllocator(std::move(index), limit);
    workload(*allocator);
    if (recorder->filtered) return {};
  }
  return calls;
}

// Replays `calls`; false when the index answers differently than recorded.
bool Replay(const std::vector<IndexCall>& calls, BfcFreeIndex& index) {
  for (const IndexCall& call : calls) {
    switch (call.kind) {
      case IndexCall::kInsert:
        index.Insert(call.key);
        break;
      case IndexCall::kErase:
        if (!index.Erase(call.key)) return false;
        break;
      case IndexCall::kFind: {
        const std::optional<FreeChunkKey> fit =
            index.FindBestFit(call.key.size);
        if ((fit ? fit->address : kNoFit) != call.found_address) return false;
        break;
      }
    }
  }
  return true;
}

enum class IndexKind { kFast, kReference };

std::unique_ptr<BfcFreeIndex> MakeIndex(IndexKind kind) {
  if (kind == IndexKind::kFast) return MakeFastFreeIndex();
  return std::make_unique<ReferenceFreeIndex>();
}

void RunReplay(benchmark::State& state, IndexKind kind,
               const std::vector<IndexCall>& calls) {
  if (calls.empty()) {
    state.SkipWithError("the workload made filtered queries");
    return;
  }
  size_t finds = 0;
  for (const IndexCall& call : calls) finds += call.kind == IndexCall::kFind;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<BfcFreeIndex> index = MakeIndex(kind);
    state.ResumeTiming();
    if (!Replay(calls, *index)) {
      state.SkipWithError("the index answered differently than recorded");
      return;
    }
    state.PauseTiming();
    index.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * calls.size());
  state.counters["calls"] = static_cast<double>(calls.size());
  state.counters["finds"] = static_cast<double>(finds);
}

// Enough allocator steps that a replay takes milliseconds, so pausing the
// timer around index construction costs nothing measurable.
constexpr size_t kSteps = 200'000;

template <IndexKind kKind>
void BM_IndexDelayedFree(benchmark::State& state) {
  const size_t delay = state.range(0);
  const std::vector<IndexCall> calls = Record([delay](BfcAllocator& allocator) {
    std::vector<void*> ring(delay, nullptr);
    for (size_t step = 0; step < kSteps; ++step)
      bench::DelayedFreeStep(allocator, ring, step);
    for (void* p : ring) allocator.Deallocate(p);
  });
  RunReplay(state, kKind, calls);
}

template <IndexKind kKind>
void BM_IndexRandomized(benchmark::State& state) {
  const size_t live = state.range(0);
  const std::vector<IndexCall> calls = Record([live](BfcAllocator& allocator) {
    std::vector<void*> slots(2 * live, nullptr);
    bench::RunWorkload(allocator, bench::RandomWorkload(live, kSteps), slots);
  });
  RunReplay(state, kKind, calls);
}

template <IndexKind kKind>
void BM_IndexRandomizedToTheLimit(benchmark::State& state) {
  const std::vector<IndexCall> calls = Record(
      [](BfcAllocator& allocator) { bench::RunToTheLimit(allocator, kSteps); },
      bench::kLimitWorkloadBytes);
  RunReplay(state, kKind, calls);
}

template <IndexKind kKind>
void BM_IndexFragmented(benchmark::State& state) {
  const size_t holes = state.range(0);
  const std::vector<IndexCall> calls = Record([holes](BfcAllocator& allocator) {
    const std::vector<void*> pinned = bench::Fragment(allocator, holes);
    // Fewer steps: the reference scans up to 10,000 holes per query.
    for (size_t step = 0; step < kSteps / 20; ++step)
      allocator.Deallocate(
          allocator.AllocateRaw(256, bench::kFragmentedRequest));
    for (void* p : pinned) allocator.Deallocate(p);
  });
  RunReplay(state, kKind, calls);
}

constexpr IndexKind kFast = IndexKind::kFast;
constexpr IndexKind kReference = IndexKind::kReference;

// Each benchmark runs for both index kinds with the same arguments.
void Delays(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMicrosecond)->RangeMultiplier(10)->Range(1, 10000);
}
void LiveOrHoles(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMicrosecond)->RangeMultiplier(10)->Range(100, 10000);
}
void NoArguments(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK_TEMPLATE(BM_IndexDelayedFree, kFast)->Apply(Delays);
BENCHMARK_TEMPLATE(BM_IndexDelayedFree, kReference)->Apply(Delays);
BENCHMARK_TEMPLATE(BM_IndexRandomized, kFast)->Apply(LiveOrHoles);
BENCHMARK_TEMPLATE(BM_IndexRandomized, kReference)->Apply(LiveOrHoles);
BENCHMARK_TEMPLATE(BM_IndexRandomizedToTheLimit, kFast)->Apply(NoArguments);
BENCHMARK_TEMPLATE(BM_IndexRandomizedToTheLimit, kReference)
    ->Apply(NoArguments);
BENCHMARK_TEMPLATE(BM_IndexFragmented, kFast)->Apply(LiveOrHoles);
BENCHMARK_TEMPLATE(BM_IndexFragmented, kReference)->Apply(LiveOrHoles);

}  // namespace
}  // namespace tensormem

BENCHMARK_MAIN();
