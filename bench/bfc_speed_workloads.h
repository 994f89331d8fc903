// Workloads of the BFC fast-path benchmark (bfc_speed_benchmark.cc): real
// PyTorch traces from data/models, a synthetic training trace, the allocator
// built from a specification, and the replay pass that is timed (or counted
// under callgrind).
#ifndef TENSORMEM_BENCH_BFC_SPEED_WORKLOADS_H_
#define TENSORMEM_BENCH_BFC_SPEED_WORKLOADS_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/core/units.h"
#include "tensormem/trace/replay.h"
#include "tensormem/trace/trace_io.h"

namespace tensormem::bench {

// The real traces replayed (training, batch 8: the longest of the corpus).
inline const std::vector<std::string>& RealTraceNames() {
  static const std::vector<std::string> names = {"resnet50", "mobilenet_v2",
                                                 "efficientnet_b0",
                                                 "inception_v3", "vit_b_16"};
  return names;
}

inline PreparedTrace PrepareOrDie(const Trace& trace, const std::string& what) {
  absl::StatusOr<PreparedTrace> prepared = PreparedTrace::Prepare(trace);
  if (!prepared.ok()) {
    std::fprintf(stderr, "%s: %s\n", what.c_str(),
                 prepared.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(prepared);
}

// `model` is a name of RealTraceNames() (its training trace) or any trace
// of data/models without its extension ("squeezenet1_1.infer_b8").
inline PreparedTrace LoadRealTrace(const std::string& model) {
  const bool full_name = model.find('.') != std::string::npos;
  const std::string path = std::string(TENSORMEM_DATA_DIR) + "/models/" +
                           model +
                           (full_name ? ".trace.gz" : ".train_b8.trace.gz");
  absl::StatusOr<Trace> trace = ReadTrace(path);
  if (!trace.ok()) {
    std::fprintf(stderr, "%s\n", trace.status().ToString().c_str());
    std::exit(1);
  }
  return PrepareOrDie(*trace, path);
}

// A training loop of `layers` layers repeated until `events` events: the
// forward pass keeps one activation per layer and frees a workspace right
// away, the backward pass frees activations in reverse while gradients come
// and go, and each step ends with small optimizer buffers. Sizes are fixed per
// layer (steps repeat, as real training does): log-uniform 256 B .. 32 MiB.
inline Trace SyntheticTrainingTrace(size_t events = 1'000'000,
                                    int layers = 120) {
  std::mt19937_64 random(17);
  std::uniform_real_distribution<double> exponent(8, 25);
  std::vector<uint64_t> activation(layers), workspace(layers);
  for (int l = 0; l < layers; ++l) {
    activation[l] = static_cast<uint64_t>(std::exp2(exponent(random)));
    workspace[l] = static_cast<uint64_t>(std::exp2(exponent(random)));
  }
  Trace trace;
  uint64_t next_id = 0;
  auto alloc = [&](uint64_t bytes) {
    trace.events.push_back(TraceEvent::Alloc(next_id, bytes));
    return next_id++;
  };
  auto free = [&](uint64_t id) {
    trace.events.push_back(TraceEvent::Free(id));
  };
  while (trace.events.size() < events) {
    std::vector<uint64_t> kept(layers);
    for (int l = 0; l < layers; ++l) {
      kept[l] = alloc(activation[l]);
      free(alloc(workspace[l]));
    }
    uint64_t gradient = alloc(activation[layers - 1]);
    for (int l = layers - 1; l >= 0; --l) {
      const uint64_t scratch = alloc(workspace[l]);
      const uint64_t next_gradient = alloc(activation[l]);
      free(scratch);
      free(gradient);
      free(kept[l]);
      gradient = next_gradient;
    }
    free(gradient);
    for (int b = 0; b < 8; ++b) free(alloc(256 << b));
  }
  return trace;
}

// The allocator a workload replays into: `policy` over a simulated upstream
// of `capacity` bytes (the limit), growth on, no retries, no logging; with
// `shards` > 1, that many allocators with their own upstreams, each of this
// capacity (sharded_allocator.h).
inline std::unique_ptr<Allocator> MakeSpeedAllocator(const std::string& policy,
                                                     uint64_t capacity,
                                                     int shards = 1) {
  AllocatorSpec spec;
  // "name[config]": a policy with its configuration.
  const size_t bracket = policy.find('[');
  spec.policy = policy.substr(0, bracket);
  if (bracket != std::string::npos)
    spec.config = policy.substr(bracket + 1, policy.size() - bracket - 2);
  spec.capacity = capacity;
  spec.memory_limit = capacity * shards;
  spec.shards = shards;
  BfcAllocatorOptions options;
  options.allow_retry_on_failure = false;
  options.log_failures = false;
  absl::StatusOr<BuiltAllocator> built = CreateAllocator(spec, options);
  if (!built.ok() || !built->wrapped.empty()) {
    std::fprintf(stderr, "cannot build a %s allocator: %s\n", policy.c_str(),
                 built.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(built->allocator);
}

// Frees what `blocks` still holds; returns the frees made.
inline int64_t FreeAll(Allocator& allocator, std::vector<void*>& blocks) {
  int64_t frees = 0;
  for (void*& block : blocks) {
    if (block == nullptr) continue;
    allocator.Deallocate(block);
    block = nullptr;
    ++frees;
  }
  return frees;
}

// One pass of the replay loop (as TimeReplay's), leaving nothing allocated.
// Returns the operations made. Not inlined: callgrind collects inside it.
[[gnu::noinline]] inline int64_t ReplayPass(const PreparedTrace& trace,
                                            Allocator& allocator,
                                            std::vector<void*>& blocks) {
  int64_t operations = 0;
  for (const PreparedTrace::Step& step : trace.steps()) {
    if (step.op == PreparedTrace::Op::kAlloc) {
      blocks[step.slot] = allocator.Allocate(
          step.bytes,
          step.alignment != 0 ? step.alignment : Allocator::kDefaultAlignment);
      ++operations;
    } else if (step.op == PreparedTrace::Op::kFree) {
      allocator.Deallocate(blocks[step.slot]);
      blocks[step.slot] = nullptr;
      ++operations;
    }
  }
  return operations + FreeAll(allocator, blocks);
}

}  // namespace tensormem::bench

#endif  // TENSORMEM_BENCH_BFC_SPEED_WORKLOADS_H_
