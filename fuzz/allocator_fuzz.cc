// Fuzz target: the allocators driven by decoded call sequences.
//
// The input picks an allocator and its options, then a sequence of calls:
// allocations (any size and alignment, including hostile ones), frees, bad
// frees (double, unknown, interior), statistics, dumps, region release and
// timestamp moves. After every call the driver checks:
//  - BfcAllocator::CheckInvariants;
//  - each live block is aligned, as large as asked, disjoint from the others,
//    and the statistics add up to the live blocks;
//  - misuse is refused and changes nothing;
//  - for the TensorFlow rules, an allocator over the reference free index
//    (tests/alloc) fed the same calls places every block at the same offset.
// Every BFC policy and every sub-allocator kind is covered: the lists come
// from the library, so new ones join without touching this file. The planned
// policy also gets decoded loops (planned_driver.h).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "alloc/reference_free_index.h"
#include "allocator_fuzz_setup.h"
#include "byte_reader.h"
#include "fuzz_check.h"
#include "planned_driver.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/limiting_allocator.h"
#include "tensormem/alloc/system_allocator.h"
#include "tensormem/alloc/tracking_allocator.h"

namespace tensormem::fuzz {
namespace {

constexpr int kMaxCalls = 400;

struct LiveBlock {
  void* block;
  void* twin;  // the same block in the reference allocator, or nullptr
  size_t requested;
  size_t alignment;
};

uint64_t Offset(const BfcAllocator& allocator, const void* block) {
  return reinterpret_cast<uintptr_t>(block) -
         reinterpret_cast<uintptr_t>(
             const_cast<BfcAllocator&>(allocator).upstream().BaseAddress());
}

// Hostile alignments (0, 3, 2^63) and valid ones up to 2^(max_log2 - 1).
// Real memory (system allocator, host regions) gets at most 2^20: a sanitizer
// maps and clears size + alignment for every such block.
size_t DecodeAlignment(ByteReader& input, int max_log2) {
  switch (input.Byte() % 8) {
    case 0:
      return 0;
    case 1:
      return 3;
    case 2:
      return size_t{1} << 63;
    case 3:
      return size_t{1} << (input.Byte() % max_log2);
    default:
      return 1;
  }
}

// Checks what must hold between any two calls.
void CheckState(const BfcAllocator& allocator,
                const std::map<uintptr_t, LiveBlock>& live) {
  const absl::Status invariants = allocator.CheckInvariants();
  FUZZ_CHECK(invariants.ok(), "%s", invariants.ToString().c_str());
  uint64_t in_use = 0;
  uintptr_t previous_end = 0;
  for (const auto& [address, block] : live) {
    const std::optional<size_t> allocated =
        allocator.AllocatedSize(block.block);
    FUZZ_CHECK(allocated && *allocated >= block.requested, "block lost");
    FUZZ_CHECK(allocator.RequestedSize(block.block) == block.requested,
               "requested size changed");
    FUZZ_CHECK(address >= previous_end, "live blocks overlap");
    previous_end = address + *allocated;
    in_use += *allocated;
  }
  const std::optional<AllocatorStats> stats = allocator.GetStats();
  FUZZ_CHECK(stats && stats->bytes_in_use == in_use,
             "bytes_in_use %llu, live blocks %llu",
             static_cast<unsigned long long>(stats->bytes_in_use),
             static_cast<unsigned long long>(in_use));
  FUZZ_CHECK(stats->pool_bytes <= allocator.memory_limit(), "pool over limit");
}

// A bad free must be refused and leave the statistics as they were.
void CheckRefused(BfcAllocator& allocator, void* pointer, const char* what) {
  const AllocatorStats before = *allocator.GetStats();
  const absl::Status status = allocator.CheckedDeallocate(pointer);
  FUZZ_CHECK(!status.ok(), "%s accepted", what);
  FUZZ_CHECK(allocator.GetStats()->bytes_in_use == before.bytes_in_use &&
                 allocator.GetStats()->num_allocs == before.num_allocs,
             "%s changed the statistics", what);
}

void RunBfc(ByteReader& input) {
  const BfcSetup setup = DecodeBfcSetup(input);
  std::unique_ptr<BfcAllocator> allocator = MakeBfc(setup, /*reference=*/false);
  if (allocator == nullptr) return;
  std::unique_ptr<BfcAllocator> twin;
  if (setup.reference_oracle) twin = MakeBfc(setup, /*reference=*/true);
  SharedCounter counter, twin_counter;
  if (setup.timestamps) {
    allocator->SetTimingCounter(&counter);
    if (twin) twin->SetTimingCounter(&twin_counter);
  }
  std::map<uintptr_t, LiveBlock> live;
  std::vector<void*> freed;  // for double frees
  for (int call = 0; call < kMaxCalls && !input.empty(); ++call) {
    const uint8_t op = input.Byte() % 10;
    if (op <= 3 || live.empty()) {
      size_t alignment =
          DecodeAlignment(input, setup.upstream_kind == "host" ? 21 : 40);
      // Beyond the simulated base's 2 MiB alignment, whether an aligned
      // address lies in a reservation depends on where the kernel put it, so
      // the twin's answer may differ for reasons that are not the index's.
      if (twin && alignment > (size_t{2} << 20) &&
          (alignment & (alignment - 1)) == 0) {
        alignment = size_t{2} << 20;
      }
      const size_t bytes = input.Size(setup.max_size_log2);
      void* block = allocator->AllocateRaw(alignment, bytes);
      void* twin_block = twin ? twin->AllocateRaw(alignment, bytes) : nullptr;
      if (twin) {
        FUZZ_CHECK((block == nullptr) == (twin_block == nullptr),
                   "reference index disagrees on success (call %d)", call);
        if (block != nullptr) {
          FUZZ_CHECK(Offset(*allocator, block) == Offset(*twin, twin_block),
                     "reference index places elsewhere (call %d)", call);
        }
      }
      if (block != nullptr) {
        const size_t effective = alignment > 256 ? alignment : 256;
        FUZZ_CHECK(reinterpret_cast<uintptr_t>(block) % effective == 0,
                   "misaligned block");
        live[reinterpret_cast<uintptr_t>(block)] = {block, twin_block, bytes,
                                                    alignment};
      }
    } else if (op <= 6) {
      auto it = live.begin();
      std::advance(it, input.Below(live.size()));
      FUZZ_CHECK(allocator->CheckedDeallocate(it->second.block).ok(),
                 "free of a live block refused");
      if (twin)
        FUZZ_CHECK(twin->CheckedDeallocate(it->second.twin).ok(), "twin");
      freed.push_back(it->second.block);
      live.erase(it);
      if (setup.timestamps) {
        counter.next();
        twin_counter.next();
      }
    } else if (op == 7) {
      const uint8_t kind = input.Byte() % 3;
      if (kind == 0 && !freed.empty()) {
        void* again = freed[input.Below(freed.size())];
        if (!live.count(reinterpret_cast<uintptr_t>(again)))
          CheckRefused(*allocator, again, "double free");
      } else if (kind == 1) {
        auto it = live.begin();
        std::advance(it, input.Below(live.size()));
        // Inside the block's chunk: a byte past the requested size may be
        // where the next block starts.
        const size_t allocated = *allocator->AllocatedSize(it->second.block);
        CheckRefused(*allocator,
                     static_cast<char*>(it->second.block) + 1 +
                         input.Below(allocated - 1),
                     "interior free");
      } else {
        CheckRefused(*allocator, reinterpret_cast<void*>(input.U64() | 1),
                     "unknown free");
      }
    } else if (op == 8) {
      switch (input.Byte() % 4) {
        case 0:
          allocator->ClearStats();
          if (twin) twin->ClearStats();
          break;
        case 1:
          (void)allocator->RecordMemoryDump().ToText();
          break;
        case 2:
          (void)allocator->RenderOccupancy();
          (void)allocator->Fragmentation();
          break;
        default:
          (void)allocator->LastFailureReport();
          break;
      }
    } else {
      if (setup.timestamps && input.Bool()) {
        const uint64_t frontier = input.Below(counter.get() + 1);
        allocator->SetSafeFrontier(frontier);
        if (twin) twin->SetSafeFrontier(frontier);
      } else {
        const bool released = allocator->ReleaseFreeRegions();
        if (twin) FUZZ_CHECK(twin->ReleaseFreeRegions() == released, "release");
      }
    }
    CheckState(*allocator, live);
  }
  for (const auto& [address, block] : live) {
    allocator->Deallocate(block.block);
    if (twin) twin->Deallocate(block.twin);
  }
  live.clear();
  CheckState(*allocator, live);
}

// Adaptors: a cap over a tracker over the system allocator.
void RunAdaptors(ByteReader& input) {
  SystemAllocator system;
  system.SetMisusePolicy(MisusePolicy::kCallback, [](const absl::Status&) {});
  std::shared_ptr<TrackingAllocator> tracker =
      TrackingAllocator::Create(system);
  LimitingAllocator capped(*tracker, input.Size(22));
  std::vector<std::pair<void*, size_t>> live;
  for (int call = 0; call < kMaxCalls && !input.empty(); ++call) {
    if (live.empty() || input.Bool()) {
      const size_t alignment = DecodeAlignment(input, /*max_log2=*/21);
      const size_t bytes = input.Size(20);
      // Only sizes the host can serve reach malloc; hostile ones must fail.
      void* block = capped.Allocate(bytes, alignment);
      if (block == nullptr) continue;
      FUZZ_CHECK(bytes <= capped.limit_bytes(), "allocated over the cap");
      live.push_back({block, bytes});
    } else {
      const size_t victim = input.Below(live.size());
      FUZZ_CHECK(capped.CheckedDeallocate(live[victim].first).ok(), "free");
      FUZZ_CHECK(!capped.CheckedDeallocate(live[victim].first).ok(),
                 "double free accepted");
      live.erase(live.begin() + victim);
    }
    uint64_t requested = 0;
    for (const auto& [block, bytes] : live) requested += bytes;
    const std::optional<AllocatorStats> stats = capped.GetStats();
    FUZZ_CHECK(stats && stats->bytes_in_use >= requested &&
                   stats->bytes_in_use <= capped.limit_bytes(),
               "cap statistics disagree with the live blocks");
  }
  for (const auto& [block, bytes] : live) capped.Deallocate(block);
  FUZZ_CHECK(tracker->Summary().outstanding_allocations == 0,
             "leak in tracker");
}

}  // namespace
}  // namespace tensormem::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tensormem::fuzz::ByteReader input(data, size);
  const uint8_t mode = input.Byte() % 8;
  if (mode == 0) {
    tensormem::fuzz::RunAdaptors(input);
  } else if (mode == 1) {
    tensormem::fuzz::RunPlanned(input);
  } else {
    tensormem::fuzz::RunBfc(input);
  }
  return 0;
}
