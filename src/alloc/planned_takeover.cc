// PlannedServing's switch-over: where the arena of a plan comes from when it
// takes over, and how it goes back to the fallback when the plan ends.
#include <algorithm>
#include <utility>
#include <vector>

#include "alloc/loop_placement.h"
#include "alloc/planned_serving.h"
#include "tensormem/alloc/memory_dump.h"

namespace tensormem::alloc_internal {

bool PlannedServing::TakeOver(std::shared_ptr<const LoopPlan> plan) {
  if (TakeOverInPlace(*plan)) return true;
  // What the iterations before held goes back first (free memory is split
  // by blocks that outlive them, and by holes the fallback gave back), so
  // the arena takes one stretch. No new high-water mark beyond the
  // allowance for an arena whose plan may not hold, counting room beside it
  // for the fallback to make each block that outlives an iteration once
  // more before the last one is freed.
  fallback_.TrimFreeMemory();
  const AllocatorStats stats = *fallback_.GetStats();
  if (stats.pool_bytes + plan->arena_bytes + plan->outliving_bytes >
      stats.peak_pool_bytes + growth_allowance_) {
    return false;
  }
  void* arena = fallback_.Allocate(plan->arena_bytes, plan->arena_alignment);
  if (arena == nullptr) return false;
  arena_chunks_ = {arena};
  BeginServing(std::move(plan), static_cast<char*>(arena));
  return true;
}

bool PlannedServing::TakeOverInPlace(const LoopPlan& plan) {
  // The fallback's one region is the arena: its blocks stay where they are,
  // and the plan fills the space around them. A pool of several regions
  // (an upstream that cannot extend one) keeps the arena of its own.
  const MemoryDump dump = fallback_.RecordMemoryDump();
  if (dump.regions.size() != 1) return false;
  const MemoryDump::Region& region = dump.regions.front();
  if (region.address % plan.arena_alignment != 0) return false;
  std::vector<void*> live_ptrs;
  const std::vector<LiveBlock> live = LiveBlocksIn(region, plan, live_ptrs);
  absl::StatusOr<PlacementAround> placed = PlaceAround(plan, live);
  if (!placed.ok() || placed->plan.arena_bytes > region.size) return false;
  std::vector<void*> taken;
  const bool all_taken =
      TakeFreeChunks(region, placed->plan.arena_bytes, taken);
  // What lies above goes back; the same room rule as for an arena of its
  // own.
  fallback_.TrimFreeMemory();
  const AllocatorStats stats = *fallback_.GetStats();
  if (!all_taken || stats.pool_bytes + plan.outliving_bytes >
                        stats.peak_pool_bytes + growth_allowance_) {
    for (void* block : taken) fallback_.Deallocate(block);
    return false;
  }
  arena_chunks_ = std::move(taken);
  ArmGates(*placed, live_ptrs);
  BeginServing(std::make_shared<const LoopPlan>(std::move(placed->plan)),
               reinterpret_cast<char*>(region.address));
  ++status_.plans_placed_in_pool;
  return true;
}

std::vector<LiveBlock> PlannedServing::LiveBlocksIn(
    const MemoryDump::Region& region, const LoopPlan& plan,
    std::vector<void*>& ptrs) const {
  std::vector<LiveBlock> live;
  for (const MemoryDump::Chunk& chunk : region.chunks) {
    // Decommitted address space is no memory: the plan stays off it too.
    if (!chunk.in_use && !chunk.decommitted) continue;
    LiveBlock block{.offset = chunk.address - region.address,
                    .bytes = chunk.size};
    void* ptr = reinterpret_cast<void*>(chunk.address);
    const auto it =
        chunk.in_use ? fallback_live_.find(ptr) : fallback_live_.end();
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

bool PlannedServing::TakeFreeChunks(const MemoryDump::Region& region,
                                    uint64_t top, std::vector<void*>& taken) {
  for (const MemoryDump::Chunk& chunk : region.chunks) {
    const uint64_t begin = chunk.address - region.address;
    if (chunk.in_use || chunk.decommitted || begin >= top) continue;
    const uint64_t end = std::min(begin + chunk.size, top);
    void* block = fallback_.AllocateAt(reinterpret_cast<void*>(chunk.address),
                                       end - begin);
    if (block == nullptr) return false;
    taken.push_back(block);
  }
  return true;
}

void PlannedServing::ArmGates(PlacementAround& placed,
                              const std::vector<void*>& live_ptrs) {
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
  freed_.assign(plan->arena_frees, 0);
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
  // Blocks the plan was placed around and would have reused are the
  // fallback's again: their frees free them.
  for (const void* ptr : gate_blocks_) {
    if (auto it = fallback_live_.find(ptr); it != fallback_live_.end())
      it->second.gate = kNoGate;
  }
  for (void* chunk : arena_chunks_) fallback_.Deallocate(chunk);
  arena_chunks_.clear();
  gate_begin_.clear();
  gates_.clear();
  gate_live_.clear();
  gate_blocks_.clear();
  gates_live_ = 0;
  arena_ = nullptr;
  arena_plan_ = nullptr;
}

bool PlannedServing::InArena(const void* ptr) const {
  const char* p = static_cast<const char*>(ptr);
  return arena_ != nullptr && p >= arena_ &&
         p < arena_ + arena_plan_->arena_bytes;
}

}  // namespace tensormem::alloc_internal
