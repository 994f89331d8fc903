// The contract every SubAllocator keeps, as a parameterised test suite.
//
// A test binary instantiates it with factories for its kinds:
//
//   INSTANTIATE_TEST_SUITE_P(
//       Host, SubAllocatorConformanceTest,
//       ::testing::Values(SubAllocatorConformanceParam{
//           "host", [](auto alloc_visitors, auto free_visitors) {
//             return std::make_unique<HostSubAllocator>(alloc_visitors,
//                                                       free_visitors);
//           }, /*max_alignment=*/4096}),
//       SubAllocatorConformanceName);
#ifndef TENSORMEM_TESTS_ALLOC_SUB_ALLOCATOR_CONFORMANCE_H_
#define TENSORMEM_TESTS_ALLOC_SUB_ALLOCATOR_CONFORMANCE_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tensormem/alloc/sub_allocator.h"

namespace tensormem {

struct SubAllocatorConformanceParam {
  using Factory = std::function<std::unique_ptr<SubAllocator>(
      std::vector<SubAllocator::Visitor> alloc_visitors,
      std::vector<SubAllocator::Visitor> free_visitors)>;
  std::string name;  // a test-name fragment: letters, digits, '_'
  Factory make;
  // The largest alignment the kind promises to honour.
  size_t max_alignment = 256;
  // Regions can be written from the host (false for real device memory).
  bool host_accessible = true;
};

// Test names show the kind, not the parameter's bytes.
inline void PrintTo(const SubAllocatorConformanceParam& param,
                    std::ostream* out) {
  *out << param.name;
}

class SubAllocatorConformanceTest
    : public ::testing::TestWithParam<SubAllocatorConformanceParam> {};

inline std::string SubAllocatorConformanceName(
    const ::testing::TestParamInfo<SubAllocatorConformanceParam>& info) {
  return info.param.name;
}

}  // namespace tensormem

#endif  // TENSORMEM_TESTS_ALLOC_SUB_ALLOCATOR_CONFORMANCE_H_
