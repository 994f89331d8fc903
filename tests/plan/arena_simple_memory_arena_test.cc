// SimpleMemoryArena: TFLite's own arena tests for both generations
// (specs/tflite-arena.md §8.1 and §8.4), plus misuse.
#include <cstdint>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensormem/plan/arena/simple_memory_arena.h"

namespace tensormem {
namespace {

using ::testing::HasSubstr;

SimpleMemoryArena QueueArena() {
  return SimpleMemoryArena({.generation = ArenaGeneration::kQueue});
}
SimpleMemoryArena GreedyArena() {
  return SimpleMemoryArena({.generation = ArenaGeneration::kGreedy});
}

ArenaAlloc Must(absl::StatusOr<ArenaAlloc> alloc) {
  EXPECT_TRUE(alloc.ok()) << alloc.status();
  return alloc.ok() ? *alloc : ArenaAlloc{};
}

TEST(QueueArenaTest, BasicArenaOperationsReuseTheTightestGap) {
  SimpleMemoryArena arena = QueueArena();
  ArenaAlloc a0 = Must(arena.Allocate(2047, 32));
  ArenaAlloc a1 = Must(arena.Allocate(2047, 32));
  ArenaAlloc a2 = Must(arena.Allocate(2047, 32));
  ASSERT_TRUE(arena.Deallocate(a0).ok());
  ArenaAlloc a3 = Must(arena.Allocate(1023, 32));
  ArenaAlloc a4 = Must(arena.Allocate(2047, 32));
  ASSERT_TRUE(arena.Deallocate(a1).ok());
  ArenaAlloc a5 = Must(arena.Allocate(1023, 32));
  EXPECT_EQ(a0.offset, 0);
  EXPECT_EQ(a1.offset, 2048);
  EXPECT_EQ(a2.offset, 4096);
  EXPECT_EQ(a3.offset, 0);
  EXPECT_EQ(a4.offset, 6144);
  EXPECT_EQ(a5.offset, 1024);
  EXPECT_EQ(arena.high_water_mark(), 8191);
}

TEST(QueueArenaTest, ZeroSizeAllocationsPlanNothingAndResolveToNull) {
  SimpleMemoryArena arena = QueueArena();
  ArenaAlloc zero = Must(arena.Allocate(0, 32));
  EXPECT_EQ(zero.offset, 0);
  EXPECT_EQ(zero.size, 0);
  EXPECT_TRUE(arena.Deallocate(zero).ok());
  EXPECT_TRUE(arena.Deallocate(zero).ok());  // twice is fine for size 0
  ASSERT_TRUE(arena.Commit().ok());
  absl::StatusOr<char*> ptr = arena.Resolve(zero);
  ASSERT_TRUE(ptr.ok());
  EXPECT_EQ(*ptr, nullptr);
}

TEST(QueueArenaTest, InterleavedZeroAlloc) {
  SimpleMemoryArena arena = QueueArena();
  ArenaAlloc a0 = Must(arena.Allocate(2047, 32));
  ArenaAlloc a1 = Must(arena.Allocate(0, 32));
  ArenaAlloc a2 = Must(arena.Allocate(1023, 32));
  ASSERT_TRUE(arena.Deallocate(a1).ok());
  ASSERT_TRUE(arena.Deallocate(a2).ok());
  ArenaAlloc a3 = Must(arena.Allocate(2047, 32));
  EXPECT_EQ(a0.offset, 0);
  EXPECT_EQ(a1.offset, 0);
  EXPECT_EQ(a2.offset, 2048);
  EXPECT_EQ(a3.offset, 2048);
}

TEST(QueueArenaTest, ClearKeepsTheBufferAndItOnlyGrows) {
  SimpleMemoryArena arena = QueueArena();
  for (size_t size : {2047, 1023, 4095}) {
    ArenaAlloc a = Must(arena.Allocate(size, 32));
    ArenaAlloc b = Must(arena.Allocate(size, 32));
    ArenaAlloc c = Must(arena.Allocate(size, 32));
    EXPECT_EQ(a.offset, 0);
    EXPECT_EQ(b.offset, size + 1);
    EXPECT_EQ(c.offset, 2 * (size + 1));
    ASSERT_TRUE(arena.Commit().ok());
    // hwm + 2 * 64: 6143 + 128, then unchanged, then 12287 + 128.
    EXPECT_EQ(arena.buffer_size(), size == 4095 ? 12415 : 6271);
    arena.ClearPlan();
  }
}

TEST(GreedyArenaTest, BasicArenaOperationsUseUsageIntervals) {
  SimpleMemoryArena arena = GreedyArena();
  std::vector<size_t> offsets;
  for (auto [size, tensor, first, last] :
       std::vector<std::tuple<size_t, int, int, int>>{{2047, 0, 1, 3},
                                                      {2047, 1, 2, 5},
                                                      {2047, 2, 3, 6},
                                                      {2047, 3, 5, 6},
                                                      {1023, 4, 4, 6},
                                                      {1023, 5, 6, 6}}) {
    offsets.push_back(
        Must(arena.Allocate(size, 32, tensor, first, last)).offset);
  }
  EXPECT_EQ(offsets, (std::vector<size_t>{0, 2048, 4096, 0, 6144, 2048}));
  EXPECT_EQ(arena.high_water_mark(), 7167);
}

TEST(GreedyArenaTest, ZeroAllocCommitsWithoutABuffer) {
  SimpleMemoryArena arena = GreedyArena();
  ArenaAlloc zero = Must(arena.Allocate(0, 32, 0, 1, 2));
  EXPECT_EQ(zero.offset, 0);
  EXPECT_EQ(zero.size, 0);
  absl::StatusOr<bool> moved = arena.Commit();
  ASSERT_TRUE(moved.ok());
  EXPECT_FALSE(*moved);
  EXPECT_EQ(arena.buffer_size(), 0);
  EXPECT_EQ(*arena.Resolve(zero), nullptr);
}

TEST(GreedyArenaTest, InterleavedZeroAlloc) {
  SimpleMemoryArena arena = GreedyArena();
  EXPECT_EQ(Must(arena.Allocate(2047, 32, 0, 0, 4)).offset, 0);
  EXPECT_EQ(Must(arena.Allocate(0, 32, 1, 1, 2)).offset, 0);
  EXPECT_EQ(Must(arena.Allocate(1023, 32, 2, 1, 2)).offset, 2048);
  EXPECT_EQ(Must(arena.Allocate(2047, 32, 3, 3, 4)).offset, 2048);
}

TEST(GreedyArenaTest, ClearPlanReportsWhetherTheBufferMoved) {
  SimpleMemoryArena arena = GreedyArena();
  for (size_t size : {2047, 1023, 4095}) {
    EXPECT_EQ(Must(arena.Allocate(size, 32, 0, 0, 2)).offset, 0);
    EXPECT_EQ(Must(arena.Allocate(size, 32, 1, 1, 2)).offset, size + 1);
    EXPECT_EQ(Must(arena.Allocate(size, 32, 2, 1, 2)).offset, 2 * (size + 1));
    absl::StatusOr<bool> moved = arena.Commit();
    ASSERT_TRUE(moved.ok());
    EXPECT_EQ(*moved, size != 1023) << size;
    EXPECT_EQ(arena.buffer_size(), size == 4095 ? 12287 : 6143);
    arena.ClearPlan();
  }
}

TEST(GreedyArenaTest, ReleaseBufferKeepsThePlan) {
  SimpleMemoryArena arena = GreedyArena();
  ArenaAlloc a = Must(arena.Allocate(2047, 32, 0, 0, 2));
  ArenaAlloc b = Must(arena.Allocate(2047, 32, 1, 1, 2));
  arena.ReleaseBuffer();  // nothing to release yet
  ASSERT_TRUE(*arena.Commit());
  EXPECT_NE(*arena.Resolve(a), nullptr);
  EXPECT_NE(*arena.Resolve(b), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena.base()) % 64, 0);
  arena.ReleaseBuffer();
  EXPECT_EQ(arena.base(), nullptr);
  EXPECT_FALSE(arena.Resolve(a).ok());
  ASSERT_TRUE(*arena.Commit());
  EXPECT_EQ(*arena.Resolve(b), arena.base() + 2048);
}

// Blocks at [0,1), [128,1000) and [1124,1224) leave two gaps for 64 bytes
// aligned to 32: at 32 (aligned room 96, unaligned 127) and at 1024 (aligned
// room 100, unaligned 124). TFLite measures from the unaligned end, so the
// second gap wins; an aligned measure would pick 32.
TEST(ArenaQuirkTest, UnalignedFitMeasureDecidesBetweenGaps) {
  for (ArenaGeneration generation :
       {ArenaGeneration::kQueue, ArenaGeneration::kGreedy}) {
    SimpleMemoryArena arena({.generation = generation});
    Must(arena.Allocate(1, 1, 0, 0, 10));
    ArenaAlloc filler1 = Must(arena.Allocate(127, 1, 1, 0, 0));
    Must(arena.Allocate(872, 1, 2, 0, 10));
    ArenaAlloc filler2 = Must(arena.Allocate(124, 1, 3, 0, 0));
    EXPECT_EQ(Must(arena.Allocate(100, 1, 4, 0, 10)).offset, 1124);
    if (generation == ArenaGeneration::kQueue) {
      ASSERT_TRUE(arena.Deallocate(filler1).ok());
      ASSERT_TRUE(arena.Deallocate(filler2).ok());
    }
    // Greedy: the fillers' lifetimes ([0, 0]) do not meet [5, 5].
    EXPECT_EQ(Must(arena.Allocate(64, 32, 5, 5, 5)).offset, 1024);
  }
}

TEST(ArenaMisuseTest, ResolvingBeforeCommitFails) {
  for (SimpleMemoryArena* arena : {new SimpleMemoryArena(QueueArena()),
                                   new SimpleMemoryArena(GreedyArena())}) {
    std::unique_ptr<SimpleMemoryArena> owner(arena);
    ArenaAlloc a = Must(arena->Allocate(100, 32, 7, 0, 1));
    absl::StatusOr<char*> ptr = arena->Resolve(a);
    ASSERT_FALSE(ptr.ok());
    EXPECT_THAT(ptr.status().message(),
                HasSubstr("before the arena is committed"));
  }
}

TEST(ArenaMisuseTest, DeallocatingWhatWasNotAllocatedFails) {
  SimpleMemoryArena arena = QueueArena();
  ArenaAlloc a = Must(arena.Allocate(100, 32, 3));
  ArenaAlloc wrong_size = a;
  wrong_size.size = 50;
  EXPECT_THAT(arena.Deallocate(wrong_size).message(),
              HasSubstr("100 are planned"));
  ASSERT_TRUE(arena.Deallocate(a).ok());
  absl::Status twice = arena.Deallocate(a);
  EXPECT_EQ(twice.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(twice.message(), HasSubstr("not planned"));
}

TEST(ArenaMisuseTest, OverflowingSizesAreRefused) {
  for (ArenaGeneration generation :
       {ArenaGeneration::kQueue, ArenaGeneration::kGreedy}) {
    // Address space only: the refused commit must not touch host malloc.
    SimpleMemoryArena arena({.generation = generation,
                             .callbacks = ReservedAddressSpaceCallbacks()});
    const size_t huge = std::numeric_limits<size_t>::max() / 2 + 1;
    ASSERT_TRUE(arena.Allocate(huge, 64, 0, 0, 5).ok());
    absl::StatusOr<ArenaAlloc> second = arena.Allocate(huge, 64, 1, 0, 5);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), absl::StatusCode::kOutOfRange);
    absl::StatusOr<ArenaAlloc> near_max =
        arena.Allocate(std::numeric_limits<size_t>::max(), 64, 2, 0, 5);
    EXPECT_FALSE(near_max.ok());
    // The plan itself fits in 64 bits, the buffer does not: Commit refuses.
    EXPECT_FALSE(arena.Commit().ok());
  }
}

TEST(ArenaMisuseTest, BadAlignmentsAreRefused) {
  SimpleMemoryArena arena = GreedyArena();
  EXPECT_EQ(arena.Allocate(10, 3).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(arena.Allocate(10, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(arena.Allocate(10, 128).status().message(),
              HasSubstr("no larger than the arena alignment 64"));
  SimpleMemoryArena odd({.arena_alignment = 48});
  EXPECT_FALSE(odd.Allocate(10, 16).ok());
  EXPECT_FALSE(odd.Commit().ok());
}

TEST(ArenaCallbacksTest, CommitUsesTheCallbacksAndReportsFailure) {
  int allocations = 0;
  int frees = 0;
  ArenaBufferCallbacks host = HostArenaBufferCallbacks();
  ArenaBufferCallbacks counting = host;
  counting.allocate = [&](size_t bytes, size_t alignment) {
    ++allocations;
    return host.allocate(bytes, alignment);
  };
  counting.reallocate = [&](void* old, size_t old_bytes, size_t new_bytes,
                            size_t alignment) -> void* {
    if (new_bytes > 10000) return nullptr;  // pretend the device is full
    return host.reallocate(old, old_bytes, new_bytes, alignment);
  };
  counting.free = [&](void* block, size_t bytes) {
    ++frees;
    host.free(block, bytes);
  };
  {
    SimpleMemoryArena arena({.callbacks = counting});
    ArenaAlloc a = Must(arena.Allocate(1000, 64, 0, 0, 0));
    ASSERT_TRUE(arena.Commit().ok());
    char* p = *arena.Resolve(a);
    p[0] = 42;
    Must(arena.Allocate(20000, 64, 1, 0, 0));
    absl::StatusOr<bool> grown = arena.Commit();
    EXPECT_EQ(grown.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_FALSE(arena.committed());
    EXPECT_EQ(arena.buffer_size(), 1000);  // the old buffer is kept
    EXPECT_EQ(arena.base()[0], 42);
  }
  EXPECT_EQ(allocations, 1);
  EXPECT_EQ(frees, 1);
}

TEST(ArenaCallbacksTest, MissingCallbacksAreAnErrorNotACrash) {
  SimpleMemoryArena arena({.callbacks = {}});
  Must(arena.Allocate(100, 64, 0, 0, 0));
  EXPECT_EQ(arena.Commit().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ArenaCallbacksTest, ReservedAddressSpaceGivesAlignedPointersForHugePlans) {
  // More than this machine's memory; ThreadSanitizer's shadow memory leaves
  // too little address space for 1 TiB to be reserved reliably.
#if defined(__SANITIZE_THREAD__)
  constexpr size_t kHuge = size_t{64} << 30;
#else
  constexpr size_t kHuge = size_t{1} << 40;
#endif
  SimpleMemoryArena arena({.callbacks = ReservedAddressSpaceCallbacks()});
  ArenaAlloc a = Must(arena.Allocate(kHuge, 64, 0, 0, 0));
  ASSERT_TRUE(arena.Commit().ok());
  EXPECT_EQ(*arena.Resolve(a), arena.base());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena.base()) % 64, 0);
}

}  // namespace
}  // namespace tensormem
