// BufferSet: buffers with sizes and lifetimes, the input of every offline
// planner.
//
// One internal representation: each buffer is live in the half-open interval
// [lower, upper) of time steps. Files may use either convention of design.md
// §3.2 and are converted on read and back on write:
//   - `id,lower,upper,size` (MiniMalloc / idealloc): half-open, kept as is;
//   - `id,first_task,last_task,size` (TFLite): closed, read as
//     [first, last + 1).
// An optional `offset` column carries a given placement (an empty field: a
// buffer without one).
//
//   absl::StatusOr<BufferSet> set = ReadBufferSetCsv("resnet50.csv");
//   uint64_t bound = PeakLiveBytes(*set);  // lower bound of any placement
#ifndef TENSORMEM_PLAN_BUFFER_SET_H_
#define TENSORMEM_PLAN_BUFFER_SET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tensormem {

struct Buffer {
  uint64_t id = 0;
  int64_t lower = 0;  // first time step the buffer is live
  int64_t upper = 0;  // first time step it is no longer live (> lower)
  uint64_t size = 0;  // bytes
  std::optional<uint64_t> offset{};  // given placement, if any

  // True when the two lifetimes share a time step.
  bool LiveAtSameTime(const Buffer& other) const {
    return lower < other.upper && other.lower < upper;
  }
};

enum class IntervalConvention {
  kHalfOpen,  // id,lower,upper,size
  kClosed,    // id,first_task,last_task,size
};

struct BufferSet {
  std::vector<Buffer> buffers;
  // The convention the set was read in; the writer uses it again.
  IntervalConvention convention = IntervalConvention::kHalfOpen;
  // Textual ids as read (MiniMalloc files use ids such as "b1"): empty when
  // every id is a number; otherwise names[i] belongs to buffers[i], whose
  // numeric id is then its row index. The writer prints the names again.
  std::vector<std::string> names;
};

// Parses CSV text; `source` names it in errors ("path:line: what"). Ids may be
// numbers or, in every row, text (see BufferSet::names).
absl::StatusOr<BufferSet> ParseBufferSetCsv(
    std::string_view text, std::string_view source = "<input>");
absl::StatusOr<BufferSet> ReadBufferSetCsv(const std::string& path);

// Writes the set in its own convention, with an `offset` column when any
// buffer has one, and one more integer column per entry of `extra_columns`
// (e.g. {"object", ids}); each vector holds one value per buffer.
struct ExtraColumn {
  std::string name;
  std::vector<int64_t> values;
};
std::string FormatBufferSetCsv(
    const BufferSet& set, const std::vector<ExtraColumn>& extra_columns = {});

// Maximum over time of the sum of sizes of live buffers: the lower bound of
// the height of any valid placement. O(n log n).
uint64_t PeakLiveBytes(const BufferSet& set);

}  // namespace tensormem

#endif  // TENSORMEM_PLAN_BUFFER_SET_H_
