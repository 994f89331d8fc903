// The allocator fuzz target's planned driver (fuzz/planned_driver.h) on
// generated inputs: a fuzz run starts from these, and every CI run repeats
// them under the sanitizers.
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "planned_driver.h"

namespace tensormem::fuzz {
namespace {

TEST(PlannedFuzzDriverTest, GeneratedLoopsKeepEveryCheck) {
  std::mt19937 random(20261128);
  int served = 0, ended = 0;
  for (int run = 0; run < 300; ++run) {
    // The setup and the loop from random bytes; then each iteration's
    // choice: mostly "repeat" (2-7), sometimes a change (1) or a new loop (0).
    std::vector<uint8_t> data(200 + random() % 100);
    for (uint8_t& byte : data) byte = static_cast<uint8_t>(random());
    for (int i = 0; i < 16; ++i) {
      const uint32_t roll = random() % 16;
      data.push_back(static_cast<uint8_t>(roll == 0 ? 1 : 2 + roll % 6));
      if (roll == 0) {
        for (int j = 0; j < 12; ++j)
          data.push_back(static_cast<uint8_t>(random()));
      }
    }
    ByteReader input(data.data(), data.size());
    const PlannedAllocator::LoopStatus status = RunPlanned(input);
    served += status.plans_taken_over > 0;
    ended += status.mismatches > 0;
  }
  // The inputs reach serving and its ends, not only learning.
  EXPECT_GT(served, 10);
  EXPECT_GT(ended, 0);
  std::printf("[driver] runs served by a plan: %d, plans ended: %d\n", served,
              ended);
}

}  // namespace
}  // namespace tensormem::fuzz
