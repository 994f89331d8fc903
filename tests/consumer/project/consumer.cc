// A program outside the tree, built against the installed tensormem.
#include <iostream>

#include "tensormem/core/version.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/strategy_registry.h"
#include "tensormem/trace/importers.h"
#include "tensormem/trace/replay.h"
#include "tensormem/trace/replay_allocator.h"

int main() {
  tensormem::BufferSet set;
  set.buffers = {{.id = 0, .lower = 0, .upper = 2, .size = 4096},
                 {.id = 1, .lower = 1, .upper = 3, .size = 1024},
                 {.id = 2, .lower = 2, .upper = 4, .size = 2048}};
  auto plan = tensormem::RunStrategy("greedy_by_size", set,
                                     tensormem::PlanMode::kOffsets);
  auto trace = tensormem::BufferSetToTrace(set);
  if (!plan.ok() || !trace.ok()) return 1;
  auto prepared = tensormem::PreparedTrace::Prepare(*trace);
  auto target = tensormem::CreateReplayTarget({});
  if (!prepared.ok() || !target.ok()) return 1;
  auto replayed = tensormem::Replay(*prepared, *target, {});
  if (!replayed.ok()) return 1;
  std::cout << "tensormem " << tensormem::kVersion << " plan "
            << plan->total_size << " bound " << plan->lower_bound
            << " replay peak live " << replayed->metrics.peak_live_bytes
            << "\n";
  return 0;
}
