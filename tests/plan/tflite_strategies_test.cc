// The expected values of TFLite's own memory-management tests, and the worked
// traces and tie-breaks of docs/planners.md.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plan/tflite_fixtures.h"
#include "tensormem/plan/memory_management.h"
#include "tensormem/plan/object_strategies.h"
#include "tensormem/plan/offset_strategies.h"

namespace tensormem {
namespace {

using ::tensormem::testing::ChainRecords;
using ::tensormem::testing::ComplexRecords;
using ::tensormem::testing::OneRecord;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

constexpr MemoryStrategy kObjectStrategies[] = {
    MemoryStrategy::kNaive,         MemoryStrategy::kEquality,
    MemoryStrategy::kGreedyInOrder, MemoryStrategy::kGreedyByBreadth,
    MemoryStrategy::kGreedyBySize,  MemoryStrategy::kGreedyBest,
    MemoryStrategy::kMinCostFlow};

ObjectsAssignment<> Objects(const std::vector<UsageRecord<>>& records,
                            MemoryStrategy strategy) {
  ObjectsAssignment<> assignment;
  const absl::Status status =
      AssignObjectsToTensors(records, strategy, &assignment);
  EXPECT_TRUE(status.ok()) << status;
  return assignment;
}

OffsetsAssignment Offsets(const std::vector<UsageRecord<>>& records,
                          MemoryStrategy strategy, uint64_t align = 1) {
  OffsetsAssignment assignment;
  const absl::Status status =
      AssignOffsetsToTensors(records, strategy, &assignment, align);
  EXPECT_TRUE(status.ok()) << status;
  return assignment;
}

TEST(ObjectsToOffsetsTest, LaysObjectsBackToBack) {
  absl::StatusOr<OffsetsAssignment> empty = ObjectsToOffsets({});
  ASSERT_TRUE(empty.ok());
  EXPECT_THAT(empty->offsets, IsEmpty());
  EXPECT_EQ(empty->total_size, 0u);

  absl::StatusOr<OffsetsAssignment> one = ObjectsToOffsets({{0}, {16}});
  ASSERT_TRUE(one.ok());
  EXPECT_THAT(one->offsets, ElementsAre(0));
  EXPECT_EQ(one->total_size, 16u);

  absl::StatusOr<OffsetsAssignment> shared =
      ObjectsToOffsets({{0, 0, 0}, {16}});
  ASSERT_TRUE(shared.ok());
  EXPECT_THAT(shared->offsets, ElementsAre(0, 0, 0));
  EXPECT_EQ(shared->total_size, 16u);

  absl::StatusOr<OffsetsAssignment> many =
      ObjectsToOffsets({{2, 0, 2, 1, 3, 3, 1, 5}, {16, 8, 32, 32, 4, 16}});
  ASSERT_TRUE(many.ok());
  EXPECT_THAT(many->offsets, ElementsAre(24, 0, 24, 16, 56, 56, 16, 92));
  EXPECT_EQ(many->total_size, 108u);
}

TEST(ObjectsToOffsetsTest, AlignsObjectsAndRejectsUnknownObjects) {
  absl::StatusOr<OffsetsAssignment> aligned =
      ObjectsToOffsets({{0, 1, 2}, {10, 1, 5}}, 8);
  ASSERT_TRUE(aligned.ok());
  EXPECT_THAT(aligned->offsets, ElementsAre(0, 16, 24));
  EXPECT_EQ(aligned->total_size, 29u);
  EXPECT_FALSE(ObjectsToOffsets({{3}, {10}}).ok());
  EXPECT_FALSE(ObjectsToOffsets({{0, 1}, {UINT64_MAX - 4, 8}}).ok());
}

TEST(TfliteModelTest, EmptyRecords) {
  for (MemoryStrategy strategy : kObjectStrategies) {
    const ObjectsAssignment<> assignment = Objects({}, strategy);
    EXPECT_THAT(assignment.object_ids, IsEmpty());
    EXPECT_THAT(assignment.object_sizes, IsEmpty());
  }
  const OffsetsAssignment offsets = Offsets({}, MemoryStrategy::kGreedyBySize);
  EXPECT_THAT(offsets.offsets, IsEmpty());
  EXPECT_EQ(offsets.total_size, 0u);
}

TEST(TfliteModelTest, OneRecord) {
  for (MemoryStrategy strategy : kObjectStrategies) {
    const ObjectsAssignment<> assignment = Objects(OneRecord(), strategy);
    EXPECT_THAT(assignment.object_ids, ElementsAre(0));
    EXPECT_THAT(assignment.object_sizes, ElementsAre(16));
  }
  const OffsetsAssignment offsets =
      Offsets(OneRecord(), MemoryStrategy::kGreedyBySize);
  EXPECT_THAT(offsets.offsets, ElementsAre(0));
  EXPECT_EQ(offsets.total_size, 16u);
}

TEST(TfliteModelTest, ChainRecords) {
  ObjectsAssignment<> naive = Objects(ChainRecords(), MemoryStrategy::kNaive);
  EXPECT_THAT(naive.object_ids, ElementsAre(0, 1, 2, 3, 4));
  EXPECT_THAT(naive.object_sizes, ElementsAre(16, 8, 64, 32, 8));

  ObjectsAssignment<> equality =
      Objects(ChainRecords(), MemoryStrategy::kEquality);
  EXPECT_THAT(equality.object_ids, ElementsAre(0, 1, 2, 3, 1));
  EXPECT_THAT(equality.object_sizes, ElementsAre(16, 8, 64, 32));

  for (MemoryStrategy strategy :
       {MemoryStrategy::kMinCostFlow, MemoryStrategy::kGreedyInOrder,
        MemoryStrategy::kGreedyByBreadth, MemoryStrategy::kGreedyBySize}) {
    ObjectsAssignment<> assignment = Objects(ChainRecords(), strategy);
    EXPECT_THAT(assignment.object_ids, ElementsAre(0, 1, 0, 1, 0))
        << static_cast<int>(strategy);
    EXPECT_THAT(assignment.object_sizes, ElementsAre(64, 32))
        << static_cast<int>(strategy);
  }

  const OffsetsAssignment offsets =
      Offsets(ChainRecords(), MemoryStrategy::kGreedyBySize);
  EXPECT_THAT(offsets.offsets, ElementsAre(0, 64, 0, 64, 0));
  EXPECT_EQ(offsets.total_size, 96u);
}

TEST(TfliteModelTest, OffsetAssignmentWithAlignment) {
  const OffsetsAssignment offsets =
      Offsets(ChainRecords(), MemoryStrategy::kGreedyBySize, 128);
  EXPECT_THAT(offsets.offsets, ElementsAre(0, 128, 0, 128, 0));
  EXPECT_EQ(offsets.total_size, 160u);
}

TEST(TfliteModelTest, AlignmentIsIgnoredOutsideGreedyBySize) {
  const OffsetsAssignment offsets =
      Offsets(ComplexRecords(), MemoryStrategy::kGreedyInOrder, 128);
  EXPECT_EQ(offsets.total_size, 120u);
}

TEST(TfliteModelTest, ComplexRecords) {
  ObjectsAssignment<> naive = Objects(ComplexRecords(), MemoryStrategy::kNaive);
  EXPECT_THAT(naive.object_ids, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_THAT(naive.object_sizes, ElementsAre(32, 32, 8, 16, 8, 64, 8, 8, 16));
  EXPECT_EQ(TotalSize(naive), 192u);

  ObjectsAssignment<> equality =
      Objects(ComplexRecords(), MemoryStrategy::kEquality);
  EXPECT_THAT(equality.object_ids, ElementsAre(0, 1, 2, 3, 4, 5, 4, 2, 3));
  EXPECT_THAT(equality.object_sizes, ElementsAre(32, 32, 8, 16, 8, 64));
  EXPECT_EQ(TotalSize(equality), 160u);

  // The worked trace of GREEDY_BY_SIZE (docs/planners.md): t5, t1, t8, t0, t3,
  // t6, t2, t7, t4.
  ObjectsAssignment<> by_size =
      Objects(ComplexRecords(), MemoryStrategy::kGreedyBySize);
  EXPECT_THAT(by_size.object_ids, ElementsAre(1, 0, 2, 1, 3, 0, 1, 2, 0));
  EXPECT_THAT(by_size.object_sizes, ElementsAre(64, 32, 8, 8));
  EXPECT_EQ(TotalSize(by_size), 112u);

  // The worked trace of the offsets version: t5, t0, t1, t3, t8, t2, t4, t6,
  // t7.
  const OffsetsAssignment offsets =
      Offsets(ComplexRecords(), MemoryStrategy::kGreedyBySize);
  EXPECT_THAT(offsets.offsets, ElementsAre(0, 32, 80, 64, 88, 0, 64, 72, 0));
  EXPECT_EQ(offsets.total_size, 96u);
}

TEST(TfliteModelTest, GreedyBestKeepsGreedyBySizeOnATie) {
  // On Chain both greedy strategies give 96 bytes; GREEDY_BEST must equal
  // GREEDY_BY_SIZE.
  const ObjectsAssignment<> best =
      Objects(ComplexRecords(), MemoryStrategy::kGreedyBest);
  const ObjectsAssignment<> by_size =
      Objects(ComplexRecords(), MemoryStrategy::kGreedyBySize);
  const ObjectsAssignment<> breadth =
      Objects(ComplexRecords(), MemoryStrategy::kGreedyByBreadth);
  EXPECT_EQ(TotalSize(best), std::min(TotalSize(by_size), TotalSize(breadth)));
  if (TotalSize(breadth) >= TotalSize(by_size)) {
    EXPECT_EQ(best.object_ids, by_size.object_ids);
  } else {
    EXPECT_EQ(best.object_ids, breadth.object_ids);
  }
}

TEST(TfliteModelTest, InputOrderMatters) {
  const std::vector<UsageRecord<>> records = {
      {16, 2, 3}, {16, 0, 1}, {16, 4, 5}};
  for (MemoryStrategy strategy :
       {MemoryStrategy::kGreedyInOrder, MemoryStrategy::kMinCostFlow}) {
    ObjectsAssignment<> assignment = Objects(records, strategy);
    EXPECT_THAT(assignment.object_ids, ElementsAre(0, 1, 0))
        << static_cast<int>(strategy);
    EXPECT_EQ(assignment.object_sizes.size(), 2u);
  }
  ObjectsAssignment<> by_size = Objects(records, MemoryStrategy::kGreedyBySize);
  EXPECT_THAT(by_size.object_ids, ElementsAre(0, 0, 0));
  EXPECT_THAT(by_size.object_sizes, ElementsAre(16));
}

TEST(GreedyInOrderTest, TieBetweenSmallerAndLargerGoesToLarger) {
  // Released: 8 (obj0) and 24 (obj1); a 16 is 8 away from both.
  const std::vector<UsageRecord<>> records = {
      {8, 0, 0}, {24, 0, 0}, {16, 1, 1}};
  absl::StatusOr<ObjectsAssignment<>> plain = GreedyInOrderAssignment(records);
  ASSERT_TRUE(plain.ok());
  EXPECT_THAT(plain->object_ids, ElementsAre(0, 1, 1));
  EXPECT_THAT(plain->object_sizes, ElementsAre(8, 24));
  // A strictly closer smaller object wins and grows.
  absl::StatusOr<ObjectsAssignment<>> closer =
      GreedyInOrderAssignment({{12, 0, 0}, {24, 0, 0}, {16, 1, 1}});
  ASSERT_TRUE(closer.ok());
  EXPECT_THAT(closer->object_ids, ElementsAre(0, 1, 0));
  EXPECT_THAT(closer->object_sizes, ElementsAre(16, 24));
}

TEST(GreedyInOrderTest,
     ReallocationGraphRestrictsReuseAndPrefersSmallerOnTies) {
  const std::vector<UsageRecord<>> records = {
      {8, 0, 0}, {24, 0, 0}, {16, 1, 1}};
  const UsageGraph graph = {{2}, {2}, {0, 1}};
  absl::StatusOr<ObjectsAssignment<>> with_graph =
      GreedyInOrderAssignment(records, &graph);
  ASSERT_TRUE(with_graph.ok());
  EXPECT_THAT(with_graph->object_ids, ElementsAre(0, 1, 0));
  EXPECT_THAT(with_graph->object_sizes, ElementsAre(16, 24));

  // Only tensor 1's object may pass to tensor 2.
  const UsageGraph only_one = {{}, {2}, {1}};
  absl::StatusOr<ObjectsAssignment<>> restricted =
      GreedyInOrderAssignment(records, &only_one);
  ASSERT_TRUE(restricted.ok());
  EXPECT_THAT(restricted->object_ids, ElementsAre(0, 1, 1));
  // No edge at all: a new object.
  const UsageGraph none = {{}, {}, {}};
  absl::StatusOr<ObjectsAssignment<>> isolated =
      GreedyInOrderAssignment(records, &none);
  ASSERT_TRUE(isolated.ok());
  EXPECT_THAT(isolated->object_ids, ElementsAre(0, 1, 2));

  const UsageGraph wrong_size = {{}};
  EXPECT_FALSE(GreedyInOrderAssignment(records, &wrong_size).ok());
}

TEST(GreedyInOrderTest, MultidimensionalCoversWithoutGrowing) {
  // Pool (4,4) obj0 then (2,8) obj1; (2,4) ties on element count: obj0 wins.
  const std::vector<UsageRecord<Extent2>> records = {
      {{4, 4}, 0, 0}, {{2, 8}, 0, 0}, {{2, 4}, 1, 1}, {{8, 1}, 1, 1}};
  ObjectsAssignment<Extent2> assignment;
  ASSERT_TRUE(AssignObjectsToTensors(records, MemoryStrategy::kGreedyInOrder,
                                     &assignment)
                  .ok());
  EXPECT_THAT(assignment.object_ids,
              ElementsAre(0, 1, 0, 2));  // (8,1) fits neither
  ASSERT_EQ(assignment.object_sizes.size(), 3u);
  EXPECT_EQ(assignment.object_sizes[0], (Extent2{4, 4}));  // never grows
  EXPECT_EQ(assignment.object_sizes[2], (Extent2{8, 1}));

  const std::vector<UsageRecord<Extent3>> cubes = {
      {{2, 2, 2}, 0, 0}, {{2, 2, 4}, 0, 0}, {{2, 2, 3}, 1, 1}};
  ObjectsAssignment<Extent3> cube_plan;
  ASSERT_TRUE(
      AssignObjectsToTensors(cubes, MemoryStrategy::kGreedyInOrder, &cube_plan)
          .ok());
  EXPECT_THAT(cube_plan.object_ids, ElementsAre(0, 1, 1));
}

TEST(EqualityTest, LinearVersionTakesLowestIdHashVersionMostRecent) {
  // Objects 0 and 1 of size 8 are both released before tensor 2; 1 was
  // released last (ends at task 1).
  const std::vector<UsageRecord<>> records = {{8, 0, 0}, {8, 0, 1}, {8, 2, 2}};
  EXPECT_THAT(EqualityAssignment(records).object_ids, ElementsAre(0, 1, 0));
  EXPECT_THAT(EqualityAssignmentWithHash(records).object_ids,
              ElementsAre(0, 1, 1));

  const std::vector<UsageRecord<Extent2>> textures = {
      {{2, 2}, 0, 0}, {{2, 2}, 0, 1}, {{2, 2}, 2, 2}, {{4, 1}, 2, 2}};
  ObjectsAssignment<Extent2> plan;
  ASSERT_TRUE(
      AssignObjectsToTensors(textures, MemoryStrategy::kEquality, &plan).ok());
  EXPECT_THAT(plan.object_ids,
              ElementsAre(0, 1, 0, 2));  // sizes must be equal, not covering
}

TEST(TfliteModelTest, TexturesSupportOnlySomeStrategies) {
  const std::vector<UsageRecord<Extent3>> records = {{{1, 1, 1}, 0, 0}};
  ObjectsAssignment<Extent3> plan;
  ASSERT_TRUE(
      AssignObjectsToTensors(records, MemoryStrategy::kNaive, &plan).ok());
  for (MemoryStrategy strategy :
       {MemoryStrategy::kGreedyByBreadth, MemoryStrategy::kGreedyBySize,
        MemoryStrategy::kGreedyBest, MemoryStrategy::kMinCostFlow}) {
    const absl::Status status =
        AssignObjectsToTensors(records, strategy, &plan);
    EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
    EXPECT_EQ(status.message(),
              "MemoryStrategy is not supported with current tensor size type.");
  }
}

TEST(GreedyByBreadthTest, PrefersSmallestFittingThenLargestObject) {
  // Task 0 holds 32 and 8 (objects 0, 1). Later an 8 fits both: the smaller
  // (obj1) wins; a 64 fits neither: the largest (obj0) grows.
  const std::vector<UsageRecord<>> records = {
      {32, 0, 0}, {8, 0, 0}, {8, 1, 1}, {64, 2, 2}};
  absl::StatusOr<ObjectsAssignment<>> plan = GreedyByBreadthAssignment(records);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->object_ids, ElementsAre(0, 1, 1, 0));
  EXPECT_THAT(plan->object_sizes, ElementsAre(64, 8));
}

TEST(MinCostFlowTest, CostsAbove2GiBAreExact) {
  // With 32-bit costs these sizes overflow; with 64-bit the 5 GiB tensor
  // reuses the 4 GiB object (cost 1 GiB) instead of opening a new one.
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  const std::vector<UsageRecord<>> records = {{4 * kGiB, 0, 0},
                                              {5 * kGiB, 1, 1}};
  const ObjectsAssignment<> plan = MinCostFlowAssignment(records);
  EXPECT_THAT(plan.object_ids, ElementsAre(0, 0));
  EXPECT_THAT(plan.object_sizes, ElementsAre(5 * kGiB));
}

TEST(MinCostFlowTest, ZeroSizeTensorGetsItsOwnObject) {
  const ObjectsAssignment<> plan =
      MinCostFlowAssignment({{8, 0, 0}, {0, 1, 1}});
  EXPECT_THAT(plan.object_ids, ElementsAre(0, 1));
  EXPECT_THAT(plan.object_sizes, ElementsAre(8, 0));
}

}  // namespace
}  // namespace tensormem
