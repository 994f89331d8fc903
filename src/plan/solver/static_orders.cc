#include "plan/solver/static_orders.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <tuple>

namespace tensormem::solver_internal {
namespace {

// Per buffer: the most bytes live in any of its sections. Buffers crossing the
// tightest sections are the hardest to fit, so they go first.
std::vector<uint64_t> Contention(const Problem& problem) {
  std::vector<uint64_t> contention(problem.buffers.size(), 0);
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const SolverBuffer& b = problem.buffers[i];
    for (int s = b.section_begin; s < b.section_end; ++s) {
      contention[i] = std::max(contention[i], problem.section_total[s]);
    }
  }
  return contention;
}

}  // namespace

std::vector<int> StaticOrderRanks(const Problem& problem, int index) {
  const std::vector<SolverBuffer>& buffers = problem.buffers;
  std::vector<int> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  const std::vector<uint64_t> contention = Contention(problem);
  // Sort keys, all descending: T = contention, W = duration, A = area.
  struct Keys {
    double t, w, a;
  };
  std::vector<Keys> keys(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    keys[i] = {static_cast<double>(contention[i]),
               static_cast<double>(buffers[i].duration),
               static_cast<double>(buffers[i].padded) *
                   static_cast<double>(buffers[i].duration)};
  }
  auto sort_by = [&](auto key) {
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return key(a) > key(b); });
  };
  switch (index % kBaseOrderCount) {
    case 0:
      sort_by([&](int i) {
        return std::make_tuple(keys[i].t, keys[i].w, keys[i].a);
      });
      break;
    case 1:
      sort_by([&](int i) {
        return std::make_tuple(keys[i].w, keys[i].a, keys[i].t);
      });
      break;
    case 2:
      sort_by([&](int i) {
        return std::make_tuple(keys[i].t, keys[i].a, keys[i].w);
      });
      break;
    case 3:
      sort_by([&](int i) {
        return std::make_tuple(buffers[i].padded, keys[i].w, keys[i].t);
      });
      break;
    default:
      // Contention, then the number of buffers live beside it: among equally
      // contended buffers, the most entangled first. MiniMalloc's
      // challenging set E needs it (1.6k nodes; the other orders run past
      // 300k). `overlaps` must be built.
      sort_by([&](int i) {
        return std::make_tuple(keys[i].t, problem.overlaps[i].size(),
                               keys[i].w);
      });
      break;
  }
  if (index >= kBaseOrderCount) {
    // Keep the base order's broad shape but swap near neighbours, so each
    // restart explores a different part of the tree.
    std::mt19937_64 random(static_cast<uint64_t>(index) *
                           0x9E3779B97F4A7C15ull);
    const size_t swaps = std::max<size_t>(1, order.size() / 8);
    for (size_t k = 0; k < swaps && order.size() > 1; ++k) {
      const size_t i = random() % (order.size() - 1);
      const size_t span =
          std::min<size_t>(1 + random() % 3, order.size() - 1 - i);
      std::swap(order[i], order[i + span]);
    }
  }
  std::vector<int> rank(buffers.size());
  for (size_t position = 0; position < order.size(); ++position)
    rank[order[position]] = position;
  return rank;
}

}  // namespace tensormem::solver_internal
