// Helpers shared by the BFC allocator tests.
#ifndef TENSORMEM_TESTS_ALLOC_BFC_TEST_UTIL_H_
#define TENSORMEM_TESTS_ALLOC_BFC_TEST_UTIL_H_

#include <cstdint>
#include <memory>

#include "gtest/gtest.h"
#include "tensormem/alloc/bfc_allocator.h"
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

// For ASSERT_TRUE(InvariantsHold(allocator)): the checker's message on failure.
inline ::testing::AssertionResult InvariantsHold(
    const BfcAllocator& allocator) {
  const absl::Status status = allocator.CheckInvariants();
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status;
}

}  // namespace tensormem::testing

#endif  // TENSORMEM_TESTS_ALLOC_BFC_TEST_UTIL_H_
