// The usage records of TFLite's memory-management tests, shared by the plan
// tests.
#ifndef TENSORMEM_TESTS_PLAN_TFLITE_FIXTURES_H_
#define TENSORMEM_TESTS_PLAN_TFLITE_FIXTURES_H_

#include <vector>

#include "tensormem/plan/usage_record.h"

namespace tensormem::testing {

inline std::vector<UsageRecord<>> OneRecord() { return {{16, 0, 1}}; }

inline std::vector<UsageRecord<>> ChainRecords() {
  return {{16, 0, 1}, {8, 1, 2}, {64, 2, 3}, {32, 3, 4}, {8, 4, 5}};
}

inline std::vector<UsageRecord<>> ComplexRecords() {
  return {{32, 0, 1}, {32, 1, 4}, {8, 2, 5}, {16, 3, 5}, {8, 4, 5},
          {64, 5, 7}, {8, 6, 8},  {8, 7, 8}, {16, 8, 9}};
}

}  // namespace tensormem::testing

#endif  // TENSORMEM_TESTS_PLAN_TFLITE_FIXTURES_H_
