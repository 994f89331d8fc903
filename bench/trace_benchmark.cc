// Parse speed of the trace format: in memory (ParseTrace) and streamed from a
// file, plain and gzip (TraceReader). The target is >= 100 MB/s.
//
//   build/default/bench/trace_benchmark --benchmark_filter=Parse
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "tensormem/alloc/system_allocator.h"
#include "tensormem/trace/recording_allocator.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem {
namespace {

// A trace shaped like a training step: bursts of allocations then frees,
// times in nanoseconds, two streams, half the events tagged.
const Trace& SampleTrace() {
  static const Trace* trace = [] {
    auto* t = new Trace;
    t->tags = {"", "conv", "matmul", "grad"};
    std::mt19937_64 random(42);
    std::vector<uint64_t> live;
    uint64_t next_id = 0;
    int64_t time_ns = 0;
    while (t->events.size() < 1000000) {
      time_ns += 100 + random() % 1000;
      if (live.empty() || (live.size() < 500 && random() % 2 == 0)) {
        TraceEvent event =
            TraceEvent::Alloc(next_id, 256 + random() % (64 << 20));
        event.time_ns = time_ns;
        event.stream = static_cast<int32_t>(random() % 2);
        event.tag = static_cast<uint32_t>(random() % 4);
        live.push_back(next_id++);
        t->events.push_back(event);
      } else {
        const size_t victim = random() % live.size();
        TraceEvent event = TraceEvent::Free(live[victim]);
        event.time_ns = time_ns;
        live[victim] = live.back();
        live.pop_back();
        t->events.push_back(event);
      }
    }
    return t;
  }();
  return *trace;
}

void BM_ParseTraceInMemory(benchmark::State& state) {
  const std::string text = FormatTrace(SampleTrace());
  for (auto _ : state) {
    absl::StatusOr<Trace> trace = ParseTrace(text, "bench");
    if (!trace.ok()) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(trace->events.data());
  }
  state.SetBytesProcessed(state.iterations() * text.size());
  state.SetItemsProcessed(state.iterations() * SampleTrace().events.size());
}
BENCHMARK(BM_ParseTraceInMemory)->Unit(benchmark::kMillisecond);

void BM_StreamTraceFile(benchmark::State& state) {
  const bool gzip = state.range(0) != 0;
  const std::string path =
      (std::filesystem::temp_directory_path() /
       (gzip ? "tensormem_bench.trace.gz" : "tensormem_bench.trace"))
          .string();
  if (!WriteTrace(SampleTrace(), path).ok()) {
    state.SkipWithError("cannot write the sample trace");
    return;
  }
  const size_t text_bytes = FormatTrace(SampleTrace()).size();
  for (auto _ : state) {
    absl::StatusOr<std::unique_ptr<TraceReader>> reader =
        TraceReader::Open(path);
    if (!reader.ok()) {
      state.SkipWithError("cannot open");
      break;
    }
    TraceEvent event;
    int64_t events = 0;
    while (true) {
      absl::StatusOr<bool> more = (*reader)->Next(event);
      if (!more.ok() || !*more) break;
      ++events;
    }
    benchmark::DoNotOptimize(events);
  }
  // Counted in uncompressed text bytes, so plain and gzip compare directly.
  state.SetBytesProcessed(state.iterations() * text_bytes);
  std::remove(path.c_str());
}
BENCHMARK(BM_StreamTraceFile)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_WriteTraceInMemory(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string text = FormatTrace(SampleTrace());
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}
BENCHMARK(BM_WriteTraceInMemory)->Unit(benchmark::kMillisecond);

// Cost of recording: alloc+free pairs on the system allocator, bare and
// through a TraceRecordingAllocator writing to /dev/null or to a .gz file.
// Arg: 0 bare, 1 recorded to /dev/null, 2 recorded to gzip.
void BM_RecordingOverhead(benchmark::State& state) {
  SystemAllocator system;
  std::unique_ptr<TraceWriter> writer;
  if (state.range(0) > 0) {
    const std::string path = state.range(0) == 1
                                 ? "/dev/null"
                                 : (std::filesystem::temp_directory_path() /
                                    "tensormem_record.trace.gz")
                                       .string();
    absl::StatusOr<std::unique_ptr<TraceWriter>> opened =
        TraceWriter::Open(path);
    if (!opened.ok()) {
      state.SkipWithError("cannot open the trace output");
      return;
    }
    writer = *std::move(opened);
  }
  std::optional<TraceRecordingAllocator> recorder;
  if (writer != nullptr) recorder.emplace(system, *writer);
  Allocator& allocator = recorder ? static_cast<Allocator&>(*recorder) : system;
  void* held[16] = {};
  size_t round = 0;
  for (auto _ : state) {
    // A few blocks stay live so frees are not always of the newest block.
    const size_t slot = round++ % 16;
    allocator.Deallocate(held[slot]);
    held[slot] = allocator.Allocate(64 + slot * 192);
  }
  for (void* ptr : held) allocator.Deallocate(ptr);
  state.SetItemsProcessed(state.iterations());  // one alloc + one free each
}
BENCHMARK(BM_RecordingOverhead)->Arg(0)->Arg(1)->Arg(2);

}  // namespace
}  // namespace tensormem

BENCHMARK_MAIN();
