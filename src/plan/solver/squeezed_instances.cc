#include "plan/solver/squeezed_instances.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "tensormem/core/status_macros.h"
#include "tensormem/plan/offset_strategies.h"
#include "tensormem/plan/usage_record.h"

namespace tensormem::solver_internal {
namespace {

constexpr uint64_t kSizeUnit = 64;

// The set's non-empty buffers with sizes scaled by [0.75, 1.25], ids 0...
BufferSet Jittered(const BufferSet& set, std::mt19937_64& random) {
  std::uniform_real_distribution<double> factor(0.75, 1.25);
  BufferSet jittered;
  for (const Buffer& buffer : set.buffers) {
    if (buffer.size == 0) continue;
    const double units =
        static_cast<double>(buffer.size) * factor(random) / kSizeUnit;
    jittered.buffers.push_back(
        {.id = jittered.buffers.size(),
         .lower = buffer.lower,
         .upper = buffer.upper,
         .size = static_cast<uint64_t>(std::max(1.0, std::round(units))) *
                 kSizeUnit});
  }
  return jittered;
}

// Buffer `i` grows up to the nearest buffer above it while both live.
void GrowUpward(std::vector<Buffer>& buffers,
                const std::vector<uint64_t>& offsets, size_t i,
                uint64_t height) {
  const uint64_t top = offsets[i] + buffers[i].size;
  uint64_t ceiling = height;
  for (size_t j = 0; j < buffers.size(); ++j) {
    if (j != i && offsets[j] >= top && buffers[i].LiveAtSameTime(buffers[j]))
      ceiling = std::min(ceiling, offsets[j]);
  }
  buffers[i].size = ceiling - offsets[i];
}

// Buffer `i` lives as long as no other buffer on its addresses needs them,
// within the set's time span [first, last).
void StretchLifetime(std::vector<Buffer>& buffers,
                     const std::vector<uint64_t>& offsets, size_t i,
                     int64_t first, int64_t last) {
  int64_t lower = first, upper = last;
  const uint64_t begin = offsets[i], end = offsets[i] + buffers[i].size;
  for (size_t j = 0; j < buffers.size(); ++j) {
    if (j == i || offsets[j] >= end || offsets[j] + buffers[j].size <= begin)
      continue;
    // A valid packing: a buffer on the same addresses lives before or after.
    if (buffers[j].upper <= buffers[i].lower) {
      lower = std::max(lower, buffers[j].upper);
    } else {
      upper = std::min(upper, buffers[j].lower);
    }
  }
  buffers[i].lower = lower;
  buffers[i].upper = upper;
}

}  // namespace

absl::StatusOr<HardInstance> SqueezeRealSet(const BufferSet& set,
                                            uint64_t seed) {
  std::mt19937_64 random(seed);
  BufferSet squeezed = Jittered(set, random);
  TM_ASSIGN_OR_RETURN(const std::vector<UsageRecord<>> records,
                      ToUsageRecords(squeezed));
  TM_ASSIGN_OR_RETURN(const BestFitResult packed, BestFitMulti(records, 1));
  std::vector<Buffer>& buffers = squeezed.buffers;
  const std::vector<uint64_t>& offsets = packed.offsets.offsets;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const Buffer& buffer : buffers) {
    first = std::min(first, buffer.lower);
    last = std::max(last, buffer.upper);
  }
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), random);
  for (const size_t i : order)
    GrowUpward(buffers, offsets, i, packed.offsets.total_size);
  std::shuffle(order.begin(), order.end(), random);
  for (const size_t i : order)
    StretchLifetime(buffers, offsets, i, first, last);

  // Shuffled, so that the file's order tells the planner nothing.
  std::shuffle(order.begin(), order.end(), random);
  HardInstance hard;
  hard.capacity = packed.offsets.total_size;
  for (const size_t i : order) {
    Buffer buffer = buffers[i];
    buffer.id = hard.set.buffers.size();
    hard.set.buffers.push_back(buffer);
    hard.offsets.push_back(offsets[i]);
  }
  return hard;
}

}  // namespace tensormem::solver_internal
