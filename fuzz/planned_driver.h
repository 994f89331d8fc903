// The allocator fuzz target's driver for the planned policy: a loop decoded
// from the input (allocations, and frees of earlier blocks of the same
// iteration), run for several iterations with changes decoded from the input
// at chosen iterations (another size, a free made late, an extra block, a
// bad free), into a PlannedAllocator that plans inline. After every call it
// checks that the live blocks are disjoint, as large as asked and aligned,
// that the statistics add up, that the fallback's invariants hold and that
// misuse is refused. Loops are what the planned policy serves, so a decoded
// loop reaches the planning, confirmation, serving and fallback paths that
// random calls never would.
#ifndef TENSORMEM_FUZZ_PLANNED_DRIVER_H_
#define TENSORMEM_FUZZ_PLANNED_DRIVER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "byte_reader.h"
#include "fuzz_check.h"
#include "tensormem/alloc/allocator_spec.h"
#include "tensormem/alloc/planned_allocator.h"

namespace tensormem::fuzz {

struct LoopStep {
  bool alloc = true;
  uint64_t bytes = 0;     // alloc
  size_t block = 0;       // free: the iteration's block index
  bool previous = false;  // free: that block of the iteration before
};

// Up to 48 steps; every block is freed by the end of the iteration unless the
// input keeps it (it then lives until the end of the run) or hands it on (the
// next iteration frees it, before or after making its own: a gradient kept
// until the next step, an output bound again).
inline std::vector<LoopStep> DecodeLoop(ByteReader& input) {
  std::vector<LoopStep> steps;
  std::vector<size_t> live;
  size_t blocks = 0;
  const size_t length = 2 + input.Below(47);
  for (size_t i = 0; i < length && !input.empty(); ++i) {
    if (live.empty() || input.Byte() % 3 != 0) {
      steps.push_back({true, 1 + input.Below(uint64_t{4} << 20), 0});
      live.push_back(blocks++);
    } else {
      const size_t victim = input.Below(live.size());
      steps.push_back({false, 0, live[victim]});
      live.erase(live.begin() + static_cast<ptrdiff_t>(victim));
    }
  }
  for (size_t block : live) {
    const uint8_t fate = input.Byte() % 8;
    if (fate == 0) continue;  // kept
    if (fate == 1) {
      const size_t at = input.Below(steps.size() + 1);
      steps.insert(steps.begin() + static_cast<ptrdiff_t>(at),
                   {false, 0, block, true});
    } else {
      steps.push_back({false, 0, block});
    }
  }
  return steps;
}

class PlannedDriver {
 public:
  explicit PlannedDriver(PlannedAllocator& allocator) : allocator_(allocator) {}

  // One iteration of `steps`; `changed` (< steps.size()) alters that step:
  // another size, or a free made late (at the iteration's end).
  void Iteration(const std::vector<LoopStep>& steps, size_t changed,
                 ByteReader& input) {
    std::vector<void*> blocks, late;
    for (size_t i = 0; i < steps.size(); ++i) {
      LoopStep step = steps[i];
      if (i == changed) step.bytes += 1 + input.Below(1 << 16);
      const std::vector<void*>& owner = step.previous ? previous_ : blocks;
      if (step.alloc) {
        blocks.push_back(Allocate(step.bytes));
      } else if (step.block < owner.size() && i == changed) {
        late.push_back(owner[step.block]);
      } else if (step.block < owner.size()) {
        Free(owner[step.block]);
      }
      if (i == changed && input.Bool()) BadFree(input);
      Check();
    }
    for (void* block : late) Free(block);
    Check();
    previous_ = std::move(blocks);
  }

  void FreeAll() {
    while (!live_.empty()) Free(reinterpret_cast<void*>(live_.begin()->first));
    Check();
  }

 private:
  void* Allocate(uint64_t bytes) {
    void* block = allocator_.Allocate(bytes);
    FUZZ_CHECK(block != nullptr, "out of memory at %llu live bytes",
               static_cast<unsigned long long>(LiveBytes()));
    FUZZ_CHECK(
        reinterpret_cast<uintptr_t>(block) % Allocator::kDefaultAlignment == 0,
        "misaligned block");
    live_[reinterpret_cast<uintptr_t>(block)] = bytes;
    return block;
  }

  void Free(void* block) {
    if (block == nullptr || !live_.count(reinterpret_cast<uintptr_t>(block)))
      return;  // freed already (a block the loop frees twice over changes)
    FUZZ_CHECK(allocator_.CheckedDeallocate(block).ok(), "free refused");
    live_.erase(reinterpret_cast<uintptr_t>(block));
    freed_.push_back(block);
  }

  void BadFree(ByteReader& input) {
    const AllocatorStats before = *allocator_.GetStats();
    void* bad = reinterpret_cast<void*>(input.U64() | 1);
    if (!freed_.empty() && input.Bool()) {
      bad = freed_[input.Below(freed_.size())];
      if (live_.count(reinterpret_cast<uintptr_t>(bad))) return;
    }
    FUZZ_CHECK(!allocator_.CheckedDeallocate(bad).ok(), "bad free accepted");
    FUZZ_CHECK(allocator_.GetStats()->bytes_in_use == before.bytes_in_use,
               "a bad free changed the statistics");
  }

  uint64_t LiveBytes() const {
    uint64_t bytes = 0;
    for (const auto& [address, size] : live_) bytes += size;
    return bytes;
  }

  void Check() {
    const absl::Status invariants = allocator_.fallback().CheckInvariants();
    FUZZ_CHECK(invariants.ok(), "%s", invariants.ToString().c_str());
    uint64_t in_use = 0;
    uintptr_t previous_end = 0;
    for (const auto& [address, bytes] : live_) {
      const void* block = reinterpret_cast<const void*>(address);
      const std::optional<size_t> allocated = allocator_.AllocatedSize(block);
      FUZZ_CHECK(allocated && *allocated >= bytes, "block lost");
      FUZZ_CHECK(allocator_.RequestedSize(block) == bytes, "size changed");
      FUZZ_CHECK(address >= previous_end, "live blocks overlap");
      previous_end = address + *allocated;
      in_use += *allocated;
    }
    FUZZ_CHECK(allocator_.GetStats()->bytes_in_use == in_use,
               "bytes_in_use disagrees with the live blocks");
  }

  PlannedAllocator& allocator_;
  std::map<uintptr_t, uint64_t> live_;  // address -> requested bytes
  std::vector<void*> freed_;
  std::vector<void*> previous_;  // the last iteration's blocks, by index
};

// Returns what the allocator did (for tests of the driver's reach).
inline PlannedAllocator::LoopStatus RunPlanned(ByteReader& input) {
  AllocatorSpec spec;
  spec.policy = "planned";
  spec.config = "planning:inline";
  spec.capacity = uint64_t{64} << 30;
  spec.memory_limit = uint64_t{16} << 30;
  spec.granule = (uint64_t{1} << 16) << input.Below(6);  // 64 KiB to 2 MiB
  BfcAllocator::Options options;
  options.allow_retry_on_failure = false;
  options.log_failures = false;
  absl::StatusOr<BuiltAllocator> built = CreateAllocator(spec, options);
  FUZZ_CHECK(built.ok(), "%s", built.status().ToString().c_str());
  auto* planned = dynamic_cast<PlannedAllocator*>(built->allocator.get());
  FUZZ_CHECK(planned != nullptr, "not a planned allocator");
  planned->SetMisusePolicy(MisusePolicy::kCallback, [](const absl::Status&) {});
  PlannedDriver driver(*planned);
  std::vector<LoopStep> loop = DecodeLoop(input);
  const int iterations = 4 + static_cast<int>(input.Below(12));
  const bool marked = input.Byte() % 4 == 0;  // MarkIteration every iteration
  for (int i = 0; i < iterations && !input.empty(); ++i) {
    // Most iterations repeat; some change a step, some begin another loop.
    const uint8_t what = input.Byte() % 8;
    if (what == 0) loop = DecodeLoop(input);
    const size_t changed =
        what == 1 ? input.Below(loop.size()) : loop.size();  // none
    if (marked) planned->MarkIteration();
    driver.Iteration(loop, changed, input);
  }
  driver.FreeAll();
  // Every plan found took over, found no room, did not repeat, or waits.
  const std::optional<AllocatorStats::LoopPlans> plans =
      planned->GetStats()->loop_plans;
  FUZZ_CHECK(plans && plans->found == plans->taken_over + plans->without_room +
                                          plans->not_repeated + plans->waiting,
             "a plan found is not accounted for");
  return planned->loop_status();
}

}  // namespace tensormem::fuzz

#endif  // TENSORMEM_FUZZ_PLANNED_DRIVER_H_
