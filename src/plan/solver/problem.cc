#include "plan/solver/problem.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "tensormem/core/checked_math.h"

namespace tensormem::solver_internal {

absl::StatusOr<Problem> BuildProblem(const BufferSet& set, uint64_t alignment) {
  if (alignment == 0)
    return absl::InvalidArgumentError("alignment must be positive, got 0");
  Problem problem;
  problem.alignment = alignment;
  std::vector<int64_t> times;
  uint64_t all_bytes = 0;
  for (int i = 0; i < static_cast<int>(set.buffers.size()); ++i) {
    const Buffer& b = set.buffers[i];
    if (b.size == 0) continue;
    if (b.upper <= b.lower) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "buffer %d: upper %d must exceed lower %d", b.id, b.upper, b.lower));
    }
    const std::optional<uint64_t> padded = CheckedRoundUp(b.size, alignment);
    const std::optional<uint64_t> sum =
        padded ? CheckedAdd(all_bytes, *padded) : std::nullopt;
    if (!sum || *sum > static_cast<uint64_t>(INT64_MAX)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "buffer %d: size %d overflows when summed with the other buffers",
          b.id, b.size));
    }
    all_bytes = *sum;
    SolverBuffer buffer;
    buffer.size = b.size;
    buffer.padded = *padded;
    buffer.duration = b.upper - b.lower;
    problem.buffers.push_back(buffer);
    problem.source_index.push_back(i);
    times.push_back(b.lower);
    times.push_back(b.upper);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  problem.num_sections = times.empty() ? 0 : static_cast<int>(times.size()) - 1;
  auto section_of = [&](int64_t time) {
    return static_cast<int>(std::lower_bound(times.begin(), times.end(), time) -
                            times.begin());
  };
  // Difference array over sections; no entry overflows because all_bytes did
  // not.
  std::vector<uint64_t> delta(problem.num_sections + 1, 0);
  std::vector<uint64_t> unpadded_delta(problem.num_sections + 1, 0);
  for (int i = 0; i < static_cast<int>(problem.buffers.size()); ++i) {
    const Buffer& source = set.buffers[problem.source_index[i]];
    SolverBuffer& buffer = problem.buffers[i];
    buffer.section_begin = section_of(source.lower);
    buffer.section_end = section_of(source.upper);
    delta[buffer.section_begin] += buffer.padded;
    delta[buffer.section_end] -= buffer.padded;
    unpadded_delta[buffer.section_begin] += buffer.size;
    unpadded_delta[buffer.section_end] -= buffer.size;
  }
  problem.section_total.resize(problem.num_sections);
  uint64_t running = 0;
  uint64_t unpadded_running = 0;
  for (int s = 0; s < problem.num_sections; ++s) {
    unpadded_running += unpadded_delta[s];
    problem.peak_bytes = std::max(problem.peak_bytes, unpadded_running);
    running += delta[s];
    problem.section_total[s] = running;
    problem.peak_padded = std::max(problem.peak_padded, running);
  }
  problem.by_start.resize(problem.buffers.size());
  for (int i = 0; i < static_cast<int>(problem.buffers.size()); ++i)
    problem.by_start[i] = i;
  std::stable_sort(problem.by_start.begin(), problem.by_start.end(),
                   [&](int a, int b) {
                     return problem.buffers[a].section_begin <
                            problem.buffers[b].section_begin;
                   });
  return problem;
}

uint64_t CountOverlapPairs(const Problem& problem) {
  std::vector<int> begins, ends;
  for (const SolverBuffer& b : problem.buffers) {
    begins.push_back(b.section_begin);
    ends.push_back(b.section_end);
  }
  std::sort(begins.begin(), begins.end());
  std::sort(ends.begin(), ends.end());
  uint64_t pairs = 0;
  for (const SolverBuffer& b : problem.buffers) {
    // Live with b: started before b ends, and not ended by the time b starts.
    const uint64_t started =
        std::lower_bound(begins.begin(), begins.end(), b.section_end) -
        begins.begin();
    const uint64_t ended =
        std::upper_bound(ends.begin(), ends.end(), b.section_begin) -
        ends.begin();
    pairs += started - ended - 1;
  }
  return pairs;
}

void BuildOverlaps(Problem& problem) {
  problem.overlaps.assign(problem.buffers.size(), {});
  const std::vector<int>& order = problem.by_start;
  for (size_t i = 0; i < order.size(); ++i) {
    const SolverBuffer& first = problem.buffers[order[i]];
    for (size_t j = i + 1; j < order.size(); ++j) {
      const SolverBuffer& second = problem.buffers[order[j]];
      if (second.section_begin >= first.section_end) break;
      problem.overlaps[order[i]].push_back(order[j]);
      problem.overlaps[order[j]].push_back(order[i]);
    }
  }
}

std::vector<std::vector<int>> SameLifetimeGroups(const Problem& problem) {
  const size_t n = problem.buffers.size();
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto span = [&](int i) {
    return std::make_pair(problem.buffers[i].section_begin,
                          problem.buffers[i].section_end);
  };
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return span(a) < span(b); });
  std::vector<std::vector<int>> twins(n);
  for (size_t begin = 0, end = 0; begin < n; begin = end) {
    end = begin + 1;
    while (end < n && span(order[end]) == span(order[begin])) ++end;
    for (size_t i = begin; i < end; ++i) {
      for (size_t j = begin; j < end; ++j)
        if (i != j) twins[order[i]].push_back(order[j]);
    }
  }
  return twins;
}

namespace {

// One pass of pushing every buffer to its lowest free spot; true if any moved.
bool SinkOnce(const Problem& problem, std::vector<uint64_t>& offsets) {
  const size_t n = problem.buffers.size();
  bool moved = false;
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return offsets[a] < offsets[b]; });
  for (const int u : order) {
    std::vector<std::pair<uint64_t, uint64_t>> taken;
    for (const int v : problem.overlaps[u])
      taken.emplace_back(offsets[v], offsets[v] + problem.buffers[v].padded);
    std::sort(taken.begin(), taken.end());
    uint64_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (offset + problem.buffers[u].padded <= begin) break;
      offset = std::max(offset, end);
    }
    if (offset < offsets[u]) {
      offsets[u] = offset;
      moved = true;
    }
  }
  return moved;
}

// Swaps buffers of one lifetime that break the search's twin order (equal
// ones out of rank order anywhere; an unpadded one directly under an
// earlier-ranked one); true if any moved.
bool OrderTwins(const Problem& problem,
                const std::vector<std::vector<int>>& twins,
                const std::vector<int>& twin_rank,
                std::vector<uint64_t>& offsets) {
  bool moved = false;
  for (size_t u = 0; u < twins.size(); ++u) {
    const SolverBuffer& a = problem.buffers[u];
    for (const int v : twins[u]) {
      const SolverBuffer& b = problem.buffers[v];
      if (twin_rank[v] > twin_rank[u]) continue;  // v belongs below u
      if (a.size == b.size) {
        if (offsets[u] < offsets[v]) {
          std::swap(offsets[u], offsets[v]);
          moved = true;
        }
      } else if (a.size == a.padded && b.size == b.padded &&
                 offsets[u] + a.padded == offsets[v]) {
        offsets[v] = offsets[u];
        offsets[u] += b.padded;
        moved = true;
      }
    }
  }
  return moved;
}

}  // namespace

std::vector<uint64_t> PushDownPacking(const Problem& problem,
                                      std::vector<uint64_t> offsets,
                                      const std::vector<int>& twin_rank) {
  const std::vector<std::vector<int>> twins = SameLifetimeGroups(problem);
  // Both steps keep the packing valid and lower the sum of offset x size x
  // (number of buffers - rank), so the loop ends.
  while (SinkOnce(problem, offsets) ||
         OrderTwins(problem, twins, twin_rank, offsets)) {
  }
  return offsets;
}

}  // namespace tensormem::solver_internal
