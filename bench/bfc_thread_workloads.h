// Workloads for the thread benchmarks of bfc_speed_benchmark: the same streams
// replayed by one thread (the memory baseline of the threaded replays), and a
// producer/consumer pair (blocks freed by another thread than the one that
// allocated them).
#ifndef TENSORMEM_BENCH_BFC_THREAD_WORKLOADS_H_
#define TENSORMEM_BENCH_BFC_THREAD_WORKLOADS_H_

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "bfc_speed_workloads.h"

namespace tensormem::bench {

// `streams` copies of `trace` replayed by one thread, a step of each in turn
// (as threads would interleave them), leaving nothing allocated. Returns the
// operations made.
inline int64_t InterleavedPass(const PreparedTrace& trace, Allocator& allocator,
                               std::vector<std::vector<void*>>& blocks) {
  int64_t operations = 0;
  for (const PreparedTrace::Step& step : trace.steps()) {
    for (std::vector<void*>& stream : blocks) {
      if (step.op == PreparedTrace::Op::kAlloc) {
        stream[step.slot] = allocator.Allocate(
            step.bytes, step.alignment != 0 ? step.alignment
                                            : Allocator::kDefaultAlignment);
        ++operations;
      } else if (step.op == PreparedTrace::Op::kFree) {
        allocator.Deallocate(stream[step.slot]);
        stream[step.slot] = nullptr;
        ++operations;
      }
    }
  }
  for (std::vector<void*>& stream : blocks)
    operations += FreeAll(allocator, stream);
  return operations;
}

// One pass of the trace's allocations made by the calling thread and freed,
// in order, by a second thread, at most `in_flight` blocks behind (a
// single-producer single-consumer ring). Returns the operations made.
inline int64_t ProducerConsumerPass(const PreparedTrace& trace,
                                    Allocator& allocator, size_t in_flight) {
  std::vector<void*> ring(in_flight);
  std::atomic<uint64_t> produced{0}, consumed{0};
  std::atomic<bool> done{false};
  std::thread consumer([&] {
    uint64_t next = 0;
    while (true) {
      const uint64_t available = produced.load(std::memory_order_acquire);
      if (next == available) {
        if (done.load(std::memory_order_acquire) &&
            next == produced.load(std::memory_order_acquire)) {
          return;
        }
        std::this_thread::yield();
        continue;
      }
      for (; next < available; ++next)
        allocator.Deallocate(ring[next % in_flight]);
      consumed.store(next, std::memory_order_release);
    }
  });
  int64_t operations = 0;
  uint64_t next = 0;
  for (const PreparedTrace::Step& step : trace.steps()) {
    if (step.op != PreparedTrace::Op::kAlloc) continue;
    while (next - consumed.load(std::memory_order_acquire) >= in_flight)
      std::this_thread::yield();
    void* block = allocator.Allocate(step.bytes);
    if (block == nullptr) continue;
    ring[next % in_flight] = block;
    produced.store(++next, std::memory_order_release);
    operations += 2;
  }
  done.store(true, std::memory_order_release);
  consumer.join();
  return operations;
}

}  // namespace tensormem::bench

#endif  // TENSORMEM_BENCH_BFC_THREAD_WORKLOADS_H_
