// PlannedServing's switch-over: where the arena of a plan comes from when it
// takes over, and how it goes back to the fallback when the plan ends.
#include <algorithm>
#include <utility>
#include <vector>

#include "alloc/loop_placement.h"
#include "alloc/planned_serving.h"
#include "tensormem/alloc/memory_dump.h"
#include "tensormem/core/checked_math.h"

namespace tensormem::alloc_internal {

namespace {

// The optimal planner's time for a placement in the pool. The windowed
// orders and their repairs take 0.03-0.75 s on the loop corpus.
constexpr double kPlaceSeconds = 1.0;
// Placements started for one plan: the live blocks a placement was made
// around must still be there at a later boundary.
constexpr int kMaxPlacements = 3;

}  // namespace

PlannedServing::TakeOverStep PlannedServing::TakeOver(
    const std::shared_ptr<const LoopPlan>& plan) {
  if (const TakeOverStep in_place = TakeOverInPlace(plan);
      in_place != TakeOverStep::kNoRoom) {
    return in_place;
  }
  // What the iterations before held goes back first (free memory is split
  // by blocks that outlive them, and by holes the fallback gave back), so
  // the arena takes one stretch. No new high-water mark beyond the
  // allowance for an arena whose plan may not hold, counting room beside it
  // for the fallback to make each block that outlives an iteration once
  // more before the last one is freed.
  // Trimming changes the fallback for good (its later placements would no
  // longer be tight's): not when its blocks in use, which stay, leave no room.
  if (!PoolWithinRoom(fallback_.GetStats()->bytes_in_use + plan->arena_bytes +
                      plan->outliving_bytes)) {
    return TakeOverStep::kNoRoom;
  }
  fallback_.TrimFreeMemory();
  if (!HasRoomFor(plan->arena_bytes + plan->outliving_bytes))
    return TakeOverStep::kNoRoom;
  void* arena = fallback_.Allocate(plan->arena_bytes, plan->arena_alignment);
  if (arena == nullptr) return TakeOverStep::kNoRoom;
  arena_chunks_ = {arena};
  BeginServing(plan, static_cast<char*>(arena));
  return TakeOverStep::kServing;
}

bool PlannedServing::HasRoomFor(uint64_t bytes) const {
  return PoolWithinRoom(fallback_.GetStats()->pool_bytes + bytes);
}

bool PlannedServing::PoolWithinRoom(uint64_t pool_bytes) const {
  return pool_bytes <=
         fallback_.GetStats()->peak_pool_bytes + growth_allowance_;
}

PlannedServing::TakeOverStep PlannedServing::PlaceInPool(
    const std::shared_ptr<const LoopPlan>& plan, std::vector<LiveBlock> live,
    uint64_t region_bytes) {
  if (placement_.plan() == plan.get()) {
    if (!placement_.Done()) return TakeOverStep::kWaiting;
    if (placement_.live() == live) return TakeOverStep::kServing;
    if (placements_started_ >= kMaxPlacements) return TakeOverStep::kNoRoom;
  } else {
    placements_started_ = 0;
  }
  ++placements_started_;
  placement_.Start(plan, std::move(live),
                   {.limit = region_bytes, .seconds = kPlaceSeconds});
  return placement_.Done() ? TakeOverStep::kServing : TakeOverStep::kWaiting;
}

PlannedServing::TakeOverStep PlannedServing::TakeOverInPlace(
    const std::shared_ptr<const LoopPlan>& plan) {
  // The fallback's one region is the arena: its blocks stay where they are,
  // and the plan fills the space around them. A pool of several regions
  // (an upstream that cannot extend one) keeps the arena of its own.
  const MemoryDump dump = fallback_.RecordMemoryDump();
  if (dump.regions.size() != 1) return TakeOverStep::kNoRoom;
  const MemoryDump::Region& region = dump.regions.front();
  if (region.address % plan->arena_alignment != 0) return TakeOverStep::kNoRoom;
  std::vector<void*> live_ptrs;
  std::vector<LiveBlock> live = LiveBlocksIn(region, *plan, live_ptrs);
  if (const TakeOverStep placing =
          PlaceInPool(plan, std::move(live), region.size);
      placing != TakeOverStep::kServing) {
    return placing;
  }
  absl::StatusOr<PlacementAround> placed = placement_.Take();
  if (!placed.ok() || placed->plan.arena_bytes > region.size)
    return TakeOverStep::kNoRoom;
  // Serving commits every granule below the placement's top. When that alone
  // breaks the room rule, nothing is taken: taking and giving back would
  // leave the fallback's free memory decommitted.
  if (!PoolWithinRoom(CommittedBelow(region, placed->plan.arena_bytes) +
                      plan->outliving_bytes)) {
    return TakeOverStep::kNoRoom;
  }
  std::vector<void*> taken;
  if (!TakeBelow(region, placed->plan.arena_bytes, plan->outliving_bytes,
                 taken)) {
    for (void* block : taken) fallback_.Deallocate(block);
    fallback_.TrimFreeMemory();
    return TakeOverStep::kNoRoom;
  }
  arena_chunks_ = std::move(taken);
  ArmGates(*placed, live_ptrs);
  BeginServing(std::make_shared<const LoopPlan>(std::move(placed->plan)),
               reinterpret_cast<char*>(region.address));
  ++status_.plans_placed_in_pool;
  return TakeOverStep::kServing;
}

std::vector<LiveBlock> PlannedServing::LiveBlocksIn(
    const MemoryDump::Region& region, const LoopPlan& plan,
    std::vector<void*>& ptrs) const {
  std::vector<LiveBlock> live;
  for (const MemoryDump::Chunk& chunk : region.chunks) {
    // Decommitted stretches are the plan's to commit again.
    if (!chunk.in_use) continue;
    LiveBlock block{.offset = chunk.address - region.address,
                    .bytes = chunk.size};
    void* ptr = reinterpret_cast<void*>(chunk.address);
    const auto it = fallback_live_.find(ptr);
    // An instance of the last iteration's request j: the plan knows when it
    // is freed.
    if (it != fallback_live_.end() &&
        it->second.sequence + plan.shape.period >= next_sequence_ &&
        it->second.sequence < next_sequence_) {
      block.previous_request = static_cast<int64_t>(
          it->second.sequence + plan.shape.period - next_sequence_);
    }
    live.push_back(block);
    ptrs.push_back(ptr);
  }
  return live;
}

bool PlannedServing::TakeBelow(const MemoryDump::Region& region, uint64_t top,
                               uint64_t outliving_bytes,
                               std::vector<void*>& taken) {
  // Free memory first; what lies above the top then goes back, and the
  // decommitted stretches below it are committed again only when the pool
  // stays within the room rule of an arena of its own.
  if (!TakeChunks(region, top, /*decommitted=*/false, taken)) return false;
  fallback_.TrimFreeMemory();
  if (!HasRoomFor(RecommitBytes(region, top) + outliving_bytes)) return false;
  return TakeChunks(region, top, /*decommitted=*/true, taken);
}

bool PlannedServing::TakeChunks(const MemoryDump::Region& region, uint64_t top,
                                bool decommitted, std::vector<void*>& taken) {
  for (const MemoryDump::Chunk& chunk : region.chunks) {
    const uint64_t begin = chunk.address - region.address;
    if (chunk.in_use || chunk.decommitted != decommitted || begin >= top)
      continue;
    const uint64_t end = std::min(begin + chunk.size, top);
    void* block = fallback_.AllocateAt(reinterpret_cast<void*>(chunk.address),
                                       end - begin);
    if (block == nullptr) return false;
    taken.push_back(block);
  }
  return true;
}

uint64_t PlannedServing::CommittedBelow(const MemoryDump::Region& region,
                                        uint64_t top) const {
  // The granule that holds the top is committed whole.
  const uint64_t granule = std::max<uint64_t>(fallback_.decommit_granule(), 1);
  return std::min(RoundUp(region.address + top, granule),
                  region.address + region.size) -
         region.address;
}

uint64_t PlannedServing::RecommitBytes(const MemoryDump::Region& region,
                                       uint64_t top) const {
  const uint64_t granule = std::max<uint64_t>(fallback_.decommit_granule(), 1);
  const uint64_t top_address = RoundUp(region.address + top, granule);
  uint64_t bytes = 0;
  for (const MemoryDump::Chunk& chunk : region.chunks) {
    if (chunk.decommitted && chunk.address < region.address + top) {
      bytes += std::min(chunk.address + chunk.size, top_address) -
               RoundDown(chunk.address, granule);
    }
  }
  return bytes;
}

void PlannedServing::ArmGates(PlacementAround& placed,
                              const std::vector<void*>& live_ptrs) {
  guard_begin_ = std::move(placed.guard_begin);
  guards_ = std::move(placed.guards);
  if (guards_.empty()) guard_begin_.clear();  // nothing to look at
  gate_begin_ = std::move(placed.gate_begin);
  gates_ = std::move(placed.gates);
  gate_live_.assign(live_ptrs.size(), 0);
  gate_blocks_.clear();
  gates_live_ = 0;
  for (size_t g = 0; g < live_ptrs.size(); ++g) {
    const auto it = fallback_live_.find(live_ptrs[g]);
    if (!placed.reused[g] || it == fallback_live_.end()) continue;
    it->second.gate = static_cast<uint32_t>(g);
    gate_live_[g] = 1;
    gate_blocks_.push_back(live_ptrs[g]);
    ++gates_live_;
  }
}

void PlannedServing::BeginServing(std::shared_ptr<const LoopPlan> plan,
                                  char* arena) {
  arena_ = arena;
  live_position_.assign(plan->slot_of_offset.size(), -1);
  freed_.assign(plan->arena_frees + 1, 0);  // and MarkFreed's end mark
  arena_end_ = arena + plan->arena_bytes;
  position_ = 0;
  frontier_ = 0;
  arena_plan_ = plan;
  plan_ = std::move(plan);
  pending_.clear();  // the history starts afresh when the plan ends
  ++status_.plans_taken_over;
  iterations_before_plan_ = status_.planned_iterations;
  iteration_counted_ = false;
  // The steady state is measured from here: the first planned iteration
  // counts.
  steady_pool_ = fallback_.GetStats()->pool_bytes;
  steady_requested_ = requested_;
}

bool PlannedServing::Guarded(uint32_t position) const {
  for (uint32_t k = guard_begin_[position]; k < guard_begin_[position + 1];
       ++k) {
    if (live_position_[guards_[k]] >= 0) return true;
  }
  return false;
}

bool PlannedServing::Gated(uint32_t position) const {
  for (uint32_t k = gate_begin_[position]; k < gate_begin_[position + 1]; ++k)
    if (gate_live_[gates_[k]] != 0) return true;
  return false;
}

void PlannedServing::ReleaseGate(void* ptr, uint32_t gate) {
  gate_live_[gate] = 0;
  --gates_live_;
  arena_chunks_.push_back(ptr);
}

void PlannedServing::ReleaseIdleArena() {
  if (arena_ == nullptr || plan_ != nullptr || arena_live_ != 0) return;
  ForgetGates();
  for (void* chunk : arena_chunks_) fallback_.Deallocate(chunk);
  arena_chunks_.clear();
  arena_ = nullptr;
  arena_end_ = nullptr;
  arena_plan_ = nullptr;
}

void PlannedServing::ReleaseArena() {
  if (arena_ == nullptr || plan_ != nullptr) return;
  ForgetGates();
  // Held until its last block is freed, the arena would make the fallback
  // grow beside memory no plan uses any more (a loop that changed to larger
  // requests). So it goes back now: its live blocks stay where they are, as
  // the fallback's.
  struct Live {
    const char* begin;
    const char* end;
    int32_t position;
    bool operator<(const Live& other) const { return begin < other.begin; }
  };
  std::vector<Live> live;
  for (const int32_t position : live_position_) {
    if (position < 0) continue;
    const PlannedRequest& planned = arena_plan_->requests[position];
    live.push_back({arena_ + planned.offset,
                    arena_ + planned.offset + planned.bytes, position});
  }
  std::sort(live.begin(), live.end());
  std::erase_if(arena_chunks_, [&](void* chunk) {
    const char* begin = static_cast<const char*>(chunk);
    const char* end = begin + fallback_.AllocatedSize(chunk).value_or(0);
    // The live blocks that overlap the chunk (they do not overlap each
    // other, so their ends are sorted too). One that reaches into another
    // chunk keeps both (a placement may span chunks taken apart).
    const auto first =
        std::partition_point(live.begin(), live.end(),
                             [&](const Live& b) { return b.end <= begin; });
    auto last = first;
    std::vector<bfc::KeptPart> parts;
    for (; last != live.end() && last->begin < end; ++last) {
      if (last->begin < begin || last->end > end) return false;
      const PlannedRequest& planned = arena_plan_->requests[last->position];
      parts.push_back({.offset = static_cast<uint64_t>(last->begin - begin),
                       .bytes = planned.bytes,
                       .requested = planned.request.value});
    }
    if (parts.empty()) {
      fallback_.Deallocate(chunk);
      return true;
    }
    if (!fallback_.KeepOnly(chunk, parts)) return false;  // kept whole
    for (auto block = first; block != last; ++block) {
      const PlannedRequest& planned = arena_plan_->requests[block->position];
      live_position_[planned.slot] = -1;
      --arena_live_;
      fallback_live_.emplace(
          block->begin,
          FallbackBlock{kUnloggedBlock, planned.request.value, planned.bytes});
    }
    return true;
  });
  if (arena_live_ == 0) ReleaseIdleArena();
}

void PlannedServing::ForgetGates() {
  // Blocks the plan was placed around and would have reused are the
  // fallback's again: their frees free them.
  for (const void* ptr : gate_blocks_) {
    if (auto it = fallback_live_.find(ptr); it != fallback_live_.end())
      it->second.gate = kNoGate;
  }
  gate_begin_.clear();
  guard_begin_.clear();
  guards_.clear();
  gates_.clear();
  gate_live_.clear();
  gate_blocks_.clear();
  gates_live_ = 0;
}

bool PlannedServing::InArena(const void* ptr) const {
  const char* p = static_cast<const char*>(ptr);
  return p >= arena_ && p < arena_end_;  // both null without an arena
}

}  // namespace tensormem::alloc_internal
