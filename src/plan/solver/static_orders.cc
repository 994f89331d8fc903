#include "plan/solver/static_orders.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <tuple>

namespace tensormem::solver_internal {
namespace {

// Swaps near neighbours: keeps the order's broad shape but changes which
// packing the search meets first.
void Perturb(uint64_t seed, std::vector<int>& order) {
  std::mt19937_64 random(seed * 0x9E3779B97F4A7C15ull);
  const size_t swaps = std::max<size_t>(1, order.size() / 8);
  for (size_t k = 0; k < swaps && order.size() > 1; ++k) {
    const size_t i = random() % (order.size() - 1);
    const size_t span =
        std::min<size_t>(1 + random() % 3, order.size() - 1 - i);
    std::swap(order[i], order[i + span]);
  }
}

}  // namespace

std::vector<uint64_t> SectionContention(const Problem& problem) {
  std::vector<uint64_t> contention(problem.buffers.size(), 0);
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const SolverBuffer& b = problem.buffers[i];
    for (int s = b.section_begin; s < b.section_end; ++s) {
      contention[i] = std::max(contention[i], problem.section_total[s]);
    }
  }
  return contention;
}

void SortIntoOrder(const Problem& problem, int index,
                   const std::vector<uint64_t>& contention, uint64_t seed,
                   std::vector<int>& buffers) {
  const std::vector<SolverBuffer>& all = problem.buffers;
  // Keys, all descending: T = contention, W = duration, A = area, Z = size,
  // O = buffers live beside it; the buffer index breaks ties.
  auto t = [&](int i) { return contention[i]; };
  auto w = [&](int i) { return all[i].duration; };
  auto a = [&](int i) {
    return static_cast<double>(all[i].padded) *
           static_cast<double>(all[i].duration);
  };
  auto sort_by = [&](auto key) {
    std::sort(buffers.begin(), buffers.end(), [&](int x, int y) {
      const auto kx = key(x), ky = key(y);
      return kx != ky ? kx > ky : x < y;
    });
  };
  switch (index % kBaseOrderCount) {
    case 0:
      sort_by([&](int i) { return std::make_tuple(t(i), w(i), a(i)); });
      break;
    case 1:
      sort_by([&](int i) { return std::make_tuple(w(i), a(i), t(i)); });
      break;
    case 2:
      sort_by([&](int i) { return std::make_tuple(t(i), a(i), w(i)); });
      break;
    case 3:
      sort_by(
          [&](int i) { return std::make_tuple(all[i].padded, w(i), t(i)); });
      break;
    default:
      // Among equally contended buffers, the most entangled first.
      // MiniMalloc's challenging set E needs it (1.6k nodes; the other orders
      // run past 300k). `overlaps` must be built.
      sort_by([&](int i) {
        return std::make_tuple(t(i), problem.overlaps[i].size(), w(i));
      });
      break;
  }
  if (index >= kBaseOrderCount)
    Perturb(static_cast<uint64_t>(index) ^ seed, buffers);
}

std::vector<int> StaticOrderRanks(const Problem& problem, int index) {
  std::vector<int> order(problem.buffers.size());
  std::iota(order.begin(), order.end(), 0);
  SortIntoOrder(problem, index, SectionContention(problem), /*seed=*/0, order);
  std::vector<int> rank(order.size());
  for (size_t position = 0; position < order.size(); ++position)
    rank[order[position]] = position;
  return rank;
}

}  // namespace tensormem::solver_internal
