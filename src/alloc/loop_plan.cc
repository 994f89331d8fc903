#include "alloc/loop_plan.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "alloc/loop_index.h"

namespace tensormem::alloc_internal {
namespace {

// A request's hash, the same in every process (keys must compare across
// runs of the detector, not only within one).
uint64_t RequestHash(const LoopEvent& event) {
  uint64_t x = event.value ^ (uint64_t{event.alignment} << 32) ^
               static_cast<uint32_t>(event.stream) ^ 0x9e3779b97f4a7c15u;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

// Rotation-invariant: the same for every phase of one loop.
uint64_t LoopKey(const LoopHistory& history, const IndexedHistory& index,
                 size_t first, size_t period) {
  uint64_t sum = period * 0x2545f4914f6cdd1du;
  for (size_t i = first; i < first + period; ++i)
    sum += RequestHash(AllocAt(history, index, i));
  return sum;
}

// z[p]: how many allocations, counted back from the last, equal the ones p
// earlier (the Z function of the reversed request sequence).
std::vector<size_t> RepeatLengths(const LoopHistory& history,
                                  const IndexedHistory& index) {
  const size_t n = index.allocs.size();
  auto at = [&](size_t i) -> const LoopEvent& {
    return AllocAt(history, index, n - 1 - i);
  };
  std::vector<size_t> z(n, 0);
  if (n > 0) z[0] = n;
  size_t left = 0, right = 0;  // [left, right): the rightmost match so far
  for (size_t i = 1; i < n; ++i) {
    if (i < right) z[i] = std::min(right - i, z[i - left]);
    while (i + z[i] < n && at(z[i]).SameRequest(at(i + z[i]))) ++z[i];
    if (i + z[i] > right) left = i, right = i + z[i];
  }
  return z;
}

// Live bytes just before allocation `first` ... `last` (indices into the
// history's allocations), for the quietest point of an iteration.
std::vector<uint64_t> LiveBeforeAllocs(const LoopHistory& history, size_t first,
                                       size_t last) {
  std::vector<uint64_t> sizes;
  std::vector<uint64_t> live_before;
  uint64_t live = 0;
  for (const LoopEvent& event : history.events) {
    if (event.kind == LoopEventKind::kAlloc) {
      const size_t i = sizes.size();
      if (i >= first && i <= last) live_before.push_back(live);
      sizes.push_back(event.value);
      live += event.value;
    } else if (event.kind == LoopEventKind::kFree &&
               event.value != kUnloggedBlock &&
               event.value >= history.first_sequence &&
               event.value - history.first_sequence < sizes.size()) {
      live -= sizes[event.value - history.first_sequence];
    }
  }
  return live_before;
}

std::optional<LoopShape> FindMarkedLoop(
    const LoopHistory& history, const IndexedHistory& index,
    const absl::flat_hash_set<uint64_t>& rejected) {
  const std::vector<uint32_t>& marks = index.marks;
  if (marks.size() < 3) return std::nullopt;
  // Allocations before each of the last three marks.
  auto allocs_before = [&](uint32_t event) {
    return static_cast<size_t>(
        std::lower_bound(index.allocs.begin(), index.allocs.end(), event) -
        index.allocs.begin());
  };
  const size_t a = allocs_before(marks[marks.size() - 3]);
  const size_t b = allocs_before(marks[marks.size() - 2]);
  const size_t c = allocs_before(marks.back());
  const size_t period = c - b;
  if (period == 0 || b - a != period) return std::nullopt;
  for (size_t i = 0; i < period; ++i) {
    if (!AllocAt(history, index, a + i)
             .SameRequest(AllocAt(history, index, b + i)))
      return std::nullopt;
  }
  const uint64_t key = LoopKey(history, index, b, period);
  if (rejected.contains(key)) return std::nullopt;
  return LoopShape{history.first_sequence + a, period, true, key};
}

}  // namespace

std::optional<LoopShape> FindLoop(
    const LoopHistory& history, const absl::flat_hash_set<uint64_t>& rejected) {
  const IndexedHistory index = Index(history);
  if (!index.marks.empty()) return FindMarkedLoop(history, index, rejected);
  const size_t n = index.allocs.size();
  const std::vector<size_t> z = RepeatLengths(history, index);
  // Periods that repeat a whole iteration and one allocation more, by the
  // stretch they explain (longest first), then by period (shortest first).
  std::vector<std::pair<size_t, size_t>> candidates;  // (-span, period)
  for (size_t p = 1; 2 * p + 1 <= n; ++p) {
    if (z[p] >= p + 1) candidates.emplace_back(n - (z[p] + p), p);
  }
  std::sort(candidates.begin(), candidates.end());
  size_t best_period = 0;
  uint64_t best_key = 0;
  std::vector<size_t> rejected_periods;  // here: their multiples are too
  for (const auto& candidate : candidates) {
    const size_t unexplained = candidate.first, p = candidate.second;
    // A repetition inside an iteration (equal layers, a loop over
    // parameters) explains a stretch; the program's loop, once seen twice,
    // most of what was logged.
    if (2 * (n - unexplained) < n) break;
    const uint64_t key = LoopKey(history, index, n - p, p);
    if (rejected.contains(key) ||
        absl::c_any_of(rejected_periods,
                       [p](size_t q) { return p % q == 0; })) {
      rejected_periods.push_back(p);
      continue;
    }
    best_period = p, best_key = key;
    break;
  }
  if (best_period == 0) return std::nullopt;
  // Begin the iteration where the fewest bytes are live: blocks that cross
  // a boundary cannot be planned.
  const size_t p = best_period;
  const std::vector<uint64_t> live =
      LiveBeforeAllocs(history, n - 2 * p, n - p - 1);
  const size_t quietest =
      std::min_element(live.begin(), live.end()) - live.begin();
  return LoopShape{history.first_sequence + (n - 2 * p) + quietest, p, false,
                   best_key};
}

}  // namespace tensormem::alloc_internal
