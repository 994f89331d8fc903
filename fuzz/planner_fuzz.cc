// Fuzz target: every strategy of the registry on decoded buffer sets.
//
// The input decodes into a small buffer set (lifetimes, sizes up to hostile
// ones, chains and ties), a mode and an alignment. Every strategy that
// answers in the mode runs through RunStrategy, which proves each plan with
// the checker (InternalError when it fails); the driver checks the plan
// independently as well and that no plan beats the lower bound.
#include <cstdint>
#include <string>

#include "byte_reader.h"
#include "fuzz_check.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"
#include "tensormem/plan/strategy_registry.h"

namespace tensormem::fuzz {
namespace {

// Every strategy runs on every input, so the set's size sets the rate: 16
// buffers (48 before) take 40% less CPU per input, and chains, ties,
// duplicate ids and hostile sizes all fit in 16. Large sets are the hostile
// chain tests' (tests/trace/hostile_files_test.cc).
constexpr int kMaxBuffers = 16;

BufferSet DecodeBufferSet(ByteReader& input) {
  BufferSet set;
  const int count = input.Byte() % (kMaxBuffers + 1);
  const int max_size_log2 = input.Bool() ? 62 : 16;
  for (int i = 0; i < count; ++i) {
    Buffer buffer;
    buffer.id =
        input.Bool() ? input.Below(4 * kMaxBuffers) : i;  // duplicates too
    const uint8_t shape = input.Byte();
    if (shape < 32 && i > 0) {  // a chain: starts where the previous ends
      buffer.lower = set.buffers.back().upper - (shape & 1);
    } else {
      buffer.lower =
          static_cast<int64_t>(input.Below(64)) - (shape == 255 ? 70 : 0);
    }
    buffer.upper = buffer.lower + static_cast<int64_t>(input.Below(32)) +
                   (shape & 2 ? 0 : 1);
    buffer.size = input.Size(max_size_log2);
    set.buffers.push_back(buffer);
  }
  return set;
}

void CheckPlan(const BufferSet& set, const PlanResult& plan,
               uint64_t alignment) {
  FUZZ_CHECK(plan.offsets.size() == set.buffers.size(), "%s: offsets missing",
             plan.strategy.c_str());
  BufferSet placed = set;
  for (size_t i = 0; i < placed.buffers.size(); ++i) {
    placed.buffers[i].offset = plan.offsets[i];
    // Objects plans total their objects' sizes; their offsets add padding.
    if (plan.mode == PlanMode::kOffsets && placed.buffers[i].size > 0) {
      FUZZ_CHECK(plan.offsets[i] + placed.buffers[i].size <= plan.total_size,
                 "%s: buffer past the total", plan.strategy.c_str());
    }
  }
  const absl::Status valid = CheckPlacement(placed, alignment);
  FUZZ_CHECK(valid.ok(), "%s: %s", plan.strategy.c_str(),
             valid.ToString().c_str());
  if (plan.mode == PlanMode::kOffsets) {
    FUZZ_CHECK(plan.total_size >= plan.lower_bound, "%s: below the lower bound",
               plan.strategy.c_str());
  }
}

}  // namespace
}  // namespace tensormem::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tensormem;
  fuzz::ByteReader input(data, size);
  const PlanMode mode = input.Bool() ? PlanMode::kObjects : PlanMode::kOffsets;
  PlanOptions options;
  const uint8_t alignment_choice = input.Byte();
  options.alignment =
      alignment_choice == 0 ? 0 : uint64_t{1} << (alignment_choice % 12);
  // The search strategies stop at their limit with the best plan so far, which
  // is checked like any other; 2 ms keeps their search paths (and a proof on
  // small sets) while the search no longer takes most of the run.
  options.time_limit_seconds = 0.002;
  // Half the inputs count that limit in work (about 2,000 steps): the
  // counted clock must stop every step as the wall clock does.
  options.counted_time = (alignment_choice & 0x80) != 0;
  const BufferSet set = fuzz::DecodeBufferSet(input);
  for (const StrategyInfo* strategy : ListStrategies(mode)) {
    absl::StatusOr<PlanResult> plan =
        RunStrategy(strategy->name, set, mode, options);
    if (!plan.ok()) {
      FUZZ_CHECK(plan.status().code() != absl::StatusCode::kInternal, "%s: %s",
                 strategy->name.c_str(), plan.status().ToString().c_str());
      continue;
    }
    fuzz::CheckPlan(set, *plan, options.alignment);
  }
  return 0;
}
