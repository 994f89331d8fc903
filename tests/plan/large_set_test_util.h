// Helpers shared by the tests of the optimal planner's large-set steps.
#ifndef TENSORMEM_TESTS_PLAN_LARGE_SET_TEST_UTIL_H_
#define TENSORMEM_TESTS_PLAN_LARGE_SET_TEST_UTIL_H_

#include <cstdint>
#include <random>
#include <vector>

#include "tensormem/plan/usage_record.h"

namespace tensormem::testing {

// `n` buffers of 1-5,000 bytes, each starting at a random task below
// `horizon` and living up to a third of it, from `seed`.
inline std::vector<UsageRecord<>> RandomRecords(uint32_t seed, int n,
                                                int horizon) {
  std::mt19937 random(seed);
  std::vector<UsageRecord<>> records;
  for (int i = 0; i < n; ++i) {
    const TaskId first = random() % horizon;
    records.push_back({.tensor_size = 1 + random() % 5000,
                       .first_task = first,
                       .last_task = first + random() % (horizon / 3 + 1)});
  }
  return records;
}

}  // namespace tensormem::testing

#endif  // TENSORMEM_TESTS_PLAN_LARGE_SET_TEST_UTIL_H_
