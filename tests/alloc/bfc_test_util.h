// Helpers shared by the BFC allocator tests.
#ifndef TENSORMEM_TESTS_ALLOC_BFC_TEST_UTIL_H_
#define TENSORMEM_TESTS_ALLOC_BFC_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>

#include "gtest/gtest.h"
#include "tensormem/alloc/bfc_allocator.h"
#include "tensormem/alloc/memory_dump.h"
#include "tensormem/alloc/policy_registry.h"
#include "tensormem/alloc/simulated_sub_allocator.h"
#include "tensormem/core/units.h"

namespace tensormem::testing {

// Options for deterministic single-threaded tests: no waiting, no logging.
inline BfcAllocator::Options QuietOptions(bool allow_growth) {
  BfcAllocator::Options options;
  options.allow_growth = allow_growth;
  options.allow_retry_on_failure = false;
  options.log_failures = false;
  return options;
}

// A BFC allocator over a simulated (never touched) address space.
inline std::unique_ptr<BfcAllocator> MakeSimulatedBfc(
    uint64_t limit, BfcAllocator::Options options, bool coalescing = false) {
  return std::make_unique<BfcAllocator>(
      std::make_unique<SimulatedSubAllocator>(4 * limit, coalescing), limit,
      std::move(options));
}

// A BFC allocator under `policy_name` over `upstream`, with growth.
inline std::unique_ptr<BfcAllocator> MakeBfcOver(
    std::unique_ptr<SubAllocator> upstream, std::string_view policy_name,
    uint64_t limit = kGiB, std::string_view config = "") {
  PolicyEnvironment environment;
  environment.memory_limit = limit;
  environment.allow_growth = true;
  environment.upstream_coalesces = upstream->SupportsCoalescing();
  absl::StatusOr<std::unique_ptr<AllocationPolicy>> policy =
      CreatePolicy(policy_name, environment, config);
  EXPECT_TRUE(policy.ok()) << policy.status();
  return std::make_unique<BfcAllocator>(std::move(upstream), limit,
                                        QuietOptions(/*allow_growth=*/true),
                                        *std::move(policy));
}

// What the pool holds, and the decommitted address space inside it.
inline uint64_t PoolBytes(const BfcAllocator& allocator) {
  return static_cast<uint64_t>(allocator.GetStats()->pool_bytes);
}

inline uint64_t DecommittedBytes(const BfcAllocator& allocator) {
  uint64_t bytes = 0;
  for (const MemoryDump::Region& region : allocator.RecordMemoryDump().regions)
    for (const MemoryDump::Chunk& chunk : region.chunks)
      if (chunk.decommitted) bytes += chunk.size;
  return bytes;
}

// For ASSERT_TRUE(InvariantsHold(allocator)): the checker's message on failure.
inline ::testing::AssertionResult InvariantsHold(
    const BfcAllocator& allocator) {
  const absl::Status status = allocator.CheckInvariants();
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status;
}

}  // namespace tensormem::testing

#endif  // TENSORMEM_TESTS_ALLOC_BFC_TEST_UTIL_H_
