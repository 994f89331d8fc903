#include "plan/solver/hole_fill.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "tensormem/core/checked_math.h"

namespace tensormem::solver_internal {
namespace {

constexpr int kFillRounds = 4;

// Bytes live at each time point, with range add and range maximum in
// O(log n) (a segment tree with pending adds).
class LiveBytes {
 public:
  explicit LiveBytes(size_t points)
      : size_(points), max_(4 * points), add_(4 * points) {}

  void Add(size_t first, size_t last, int64_t bytes) {
    Add(1, 0, size_ - 1, first, last, bytes);
  }
  int64_t Max(size_t first, size_t last) const {
    return Max(1, 0, size_ - 1, first, last);
  }
  int64_t At(size_t point) const { return Max(point, point); }

 private:
  void Add(size_t node, size_t lo, size_t hi, size_t first, size_t last,
           int64_t bytes) {
    if (last < lo || hi < first) return;
    if (first <= lo && hi <= last) {
      max_[node] += bytes;
      add_[node] += bytes;
      return;
    }
    const size_t mid = lo + (hi - lo) / 2;
    Add(2 * node, lo, mid, first, last, bytes);
    Add(2 * node + 1, mid + 1, hi, first, last, bytes);
    max_[node] = add_[node] + std::max(max_[2 * node], max_[2 * node + 1]);
  }
  int64_t Max(size_t node, size_t lo, size_t hi, size_t first,
              size_t last) const {
    if (last < lo || hi < first) return INT64_MIN;
    if (first <= lo && hi <= last) return max_[node];
    const size_t mid = lo + (hi - lo) / 2;
    return add_[node] + std::max(Max(2 * node, lo, mid, first, last),
                                 Max(2 * node + 1, mid + 1, hi, first, last));
  }

  size_t size_;
  std::vector<int64_t> max_;
  std::vector<int64_t> add_;
};

// A buffer to place, its lifetime as indices into the sorted time points.
struct Candidate {
  size_t record;
  uint64_t size;
  size_t first;
  size_t last;
};

struct Hole {
  uint64_t begin;
  uint64_t end;
};

// The gaps below the highest wall, smallest first; `top` gets the highest
// wall's end.
std::vector<Hole> HolesBetween(const std::vector<UsageRecord<>>& records,
                               const PinnedOffsets& kept, uint64_t& top) {
  std::vector<std::pair<uint64_t, uint64_t>> walls;
  for (size_t i = 0; i < records.size(); ++i) {
    if (kept[i] && records[i].tensor_size > 0)
      walls.emplace_back(*kept[i], *kept[i] + records[i].tensor_size);
  }
  std::sort(walls.begin(), walls.end());
  std::vector<Hole> holes;
  top = 0;
  for (const auto& [begin, end] : walls) {
    if (begin > top) holes.push_back({top, begin});
    top = std::max(top, end);
  }
  std::stable_sort(holes.begin(), holes.end(),
                   [](const Hole& a, const Hole& b) {
                     return a.end - a.begin < b.end - b.begin;
                   });
  return holes;
}

// The live bytes are summed in int64_t: sets whose sizes add up to more
// are not filled.
bool SizesFitInt64(const std::vector<UsageRecord<>>& records) {
  uint64_t total = 0;
  for (const UsageRecord<>& record : records) {
    if (record.tensor_size > uint64_t{INT64_MAX} - total) return false;
    total += record.tensor_size;
  }
  return true;
}

// Every kept buffer lives from the first time of the set to its last.
bool KeptAreWalls(const std::vector<UsageRecord<>>& records,
                  const PinnedOffsets& kept) {
  bool any = false;
  TaskId first = ~TaskId{0};
  TaskId last = 0;
  for (const UsageRecord<>& record : records) {
    first = std::min(first, record.first_task);
    last = std::max(last, record.last_task);
  }
  for (size_t i = 0; i < records.size(); ++i) {
    if (!kept[i] || records[i].tensor_size == 0) continue;
    any = true;
    if (records[i].first_task > first || records[i].last_task < last)
      return false;
  }
  return any;
}

// The buffers to place (not kept, not empty), their lifetimes over the
// sorted distinct first times (where the peak of closed intervals lies).
std::vector<Candidate> Candidates(const std::vector<UsageRecord<>>& records,
                                  const PinnedOffsets& kept, size_t& points) {
  std::vector<TaskId> times;
  for (const UsageRecord<>& record : records)
    times.push_back(record.first_task);
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  points = times.size();
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < records.size(); ++i) {
    if (kept[i] || records[i].tensor_size == 0) continue;
    const size_t first =
        std::lower_bound(times.begin(), times.end(), records[i].first_task) -
        times.begin();
    // The last first time at or before the record's end.
    const size_t last =
        std::upper_bound(times.begin(), times.end(), records[i].last_task) -
        times.begin() - 1;
    candidates.push_back({i, records[i].tensor_size, first, last});
  }
  return candidates;
}

// The lowest aligned offset in `hole` where `c` overlaps none of `placed`
// (buffers in the hole), or nullopt.
std::optional<uint64_t> LowestFreeOffset(const Hole& hole, const Candidate& c,
                                         const std::vector<Candidate>& placed,
                                         const PinnedOffsets& offsets,
                                         uint64_t alignment) {
  std::vector<std::pair<uint64_t, uint64_t>> below;
  for (const Candidate& other : placed) {
    if (other.last < c.first || c.last < other.first) continue;
    const uint64_t at = *offsets[other.record];
    below.emplace_back(at, at + other.size);
  }
  std::sort(below.begin(), below.end());
  uint64_t offset = RoundUp(hole.begin, alignment);
  for (const auto& [begin, end] : below) {
    if (offset + c.size <= begin) break;
    offset = std::max(offset, RoundUp(end, alignment));
  }
  if (offset + c.size > hole.end) return std::nullopt;
  return offset;
}

// Puts into `hole` (holding `placed`) the candidates that spend most bytes
// where `live` exceeds `room`, while they still meet such a time. Returns
// whether any went in.
bool Fill(const Hole& hole, uint64_t alignment, int64_t room,
          std::vector<Candidate>& left, std::vector<Candidate>& placed,
          LiveBytes& live, size_t points, PinnedOffsets& offsets) {
  std::vector<uint32_t> over_before(points + 1, 0);  // prefix counts
  for (size_t p = 0; p < points; ++p)
    over_before[p + 1] = over_before[p] + (live.At(p) > room ? 1 : 0);
  std::vector<std::pair<double, size_t>> order;  // (score, index in left)
  for (size_t k = 0; k < left.size(); ++k) {
    const Candidate& c = left[k];
    const uint32_t over = over_before[c.last + 1] - over_before[c.first];
    if (over > 0 && c.size <= hole.end - hole.begin)
      order.emplace_back(static_cast<double>(c.size) * over, k);
  }
  // Ties: the larger buffer first (fewer pieces fill the hole).
  std::stable_sort(order.begin(), order.end(),
                   [&](const auto& a, const auto& b) {
                     if (a.first != b.first) return a.first > b.first;
                     return left[a.second].size > left[b.second].size;
                   });
  std::vector<uint8_t> taken(left.size(), 0);
  for (const auto& [score, k] : order) {
    const Candidate& c = left[k];
    if (live.Max(c.first, c.last) <= room) continue;
    const std::optional<uint64_t> offset =
        LowestFreeOffset(hole, c, placed, offsets, alignment);
    if (!offset) continue;
    offsets[c.record] = *offset;
    live.Add(c.first, c.last, -static_cast<int64_t>(c.size));
    placed.push_back(c);
    taken[k] = 1;
  }
  size_t kept = 0;
  for (size_t k = 0; k < left.size(); ++k)
    if (!taken[k]) left[kept++] = left[k];
  const bool any = kept < left.size();
  left.resize(kept);
  return any;
}

}  // namespace

std::optional<PinnedOffsets> FillHolesAtThePeak(
    const std::vector<UsageRecord<>>& records, const PinnedOffsets& kept,
    uint64_t alignment) {
  if (records.size() > kMaxHoleFillRecords || kept.size() != records.size() ||
      !SizesFitInt64(records) || !KeptAreWalls(records, kept)) {
    return std::nullopt;
  }
  uint64_t top = 0;
  const std::vector<Hole> holes = HolesBetween(records, kept, top);
  if (holes.empty()) return std::nullopt;
  size_t points = 0;
  std::vector<Candidate> left = Candidates(records, kept, points);
  if (left.empty()) return std::nullopt;
  LiveBytes live(points);
  for (const Candidate& c : left)
    live.Add(c.first, c.last, static_cast<int64_t>(c.size));
  // The bound is the walls (live throughout) plus the peak of the rest, or
  // the top of the walls; above the walls that leaves `room`.
  uint64_t walls = 0;
  for (size_t i = 0; i < records.size(); ++i)
    if (kept[i]) walls += records[i].tensor_size;
  const uint64_t bound =
      std::max(top, walls + static_cast<uint64_t>(live.Max(0, points - 1)));
  const auto room = static_cast<int64_t>(bound - top);
  PinnedOffsets offsets = kept;
  // Later rounds score what is left against the times still over.
  std::vector<std::vector<Candidate>> placed(holes.size());
  for (int round = 0; round < kFillRounds; ++round) {
    bool any = false;
    for (size_t h = 0; h < holes.size() && !left.empty(); ++h) {
      any |= Fill(holes[h], alignment, room, left, placed[h], live, points,
                  offsets);
    }
    if (!any) break;
  }
  return offsets;
}

}  // namespace tensormem::solver_internal
