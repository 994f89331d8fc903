// Nodes each search order needs on one instance, run alone: shows which
// orders find a placement fast and how the restart schedule should weigh
// them.
//
//   sets=../shared/data/minimalloc/challenging  # MiniMalloc's, never copied
//   ./bench/solver_order_probe --csv $sets/B.1048576.csv
//   ./bench/solver_order_probe --seed 7 --orders 20 --limit 200000
//   ./bench/solver_order_probe --csv packed.csv --guide  # its offset column
//   ./bench/solver_order_probe --csv model.csv --squeeze 1 --guide
//
// Flags: --csv PATH (capacity --capacity, default 1048576) or --seed S (a
// generated hard instance at its capacity; --family calibrated for
// CalibratedHardOptions); --orders K (orders 0..K-1; the first five are the
// base orders, later ones perturbed), --limit N (node limit per order,
// 1,000,000), --no-rerank, --guide (a known packing guides the search: a
// hard instance's own, or the CSV's offset column, e.g. another solver's
// output; its choices show where that packing departs from each order's
// first tries); --squeeze S (the CSV's set squeezed as the judged benchmark
// does, SqueezeRealSet with seed S, at its height, with its packing). For every
// fit it prints, per placement that was not its node's first candidate,
// depth:position:nodes spent on the failed siblings before it (all of them with
// --guide, else those costing at least 1% of the run): where the nodes went.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "plan/solver/feasibility_search.h"
#include "plan/solver/hard_instances.h"
#include "plan/solver/problem.h"
#include "plan/solver/squeezed_instances.h"
#include "plan/solver/static_orders.h"
#include "tensormem/plan/buffer_set.h"
#include "tensormem/plan/checker.h"

namespace tensormem {
namespace {

// The CSV's offset column, per buffer; empty unless every buffer has one.
std::vector<uint64_t> GivenOffsets(const BufferSet& set) {
  std::vector<uint64_t> offsets;
  for (const Buffer& b : set.buffers) {
    if (!b.offset) return {};
    offsets.push_back(*b.offset);
  }
  return offsets;
}

int Main(int argc, char** argv) {
  std::string csv;
  uint64_t seed = 0, squeeze = 0, limit = 1000000, capacity = 1048576;
  int orders = solver_internal::kBaseOrderCount;
  bool rerank = true, guided = false, calibrated = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--csv" && has_value) {
      csv = argv[++i];
    } else if (flag == "--seed" && has_value) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (flag == "--squeeze" && has_value) {
      squeeze = std::strtoull(argv[++i], nullptr, 10);
    } else if (flag == "--orders" && has_value) {
      orders = std::atoi(argv[++i]);
    } else if (flag == "--limit" && has_value) {
      limit = std::strtoull(argv[++i], nullptr, 10);
    } else if (flag == "--capacity" && has_value) {
      capacity = std::strtoull(argv[++i], nullptr, 10);
    } else if (flag == "--family" && has_value) {
      calibrated = std::string(argv[++i]) == "calibrated";
    } else if (flag == "--guide") {
      guided = true;
    } else if (flag == "--no-rerank") {
      rerank = false;
    } else {
      std::fprintf(stderr, "unknown flag or missing value: %s\n", argv[i]);
      return 2;
    }
  }
  if (squeeze != 0 && csv.empty()) {
    std::fprintf(stderr, "--squeeze needs --csv: it squeezes that set\n");
    return 2;
  }
  BufferSet set;
  std::vector<uint64_t> packing;  // per set buffer, for --guide
  if (!csv.empty()) {
    absl::StatusOr<BufferSet> read = ReadBufferSetCsv(csv);
    if (!read.ok()) {
      std::fprintf(stderr, "%s\n",
                   std::string(read.status().message()).c_str());
      return 1;
    }
    set = *read;
    packing = GivenOffsets(set);
    if (squeeze != 0) {
      absl::StatusOr<solver_internal::HardInstance> hard =
          solver_internal::SqueezeRealSet(set, squeeze);
      if (!hard.ok()) {
        std::fprintf(stderr, "%s\n",
                     std::string(hard.status().message()).c_str());
        return 1;
      }
      set = hard->set;
      capacity = hard->capacity;
      packing = hard->offsets;
      for (size_t i = 0; i < set.buffers.size(); ++i)
        set.buffers[i].offset = packing[i];
    }
  } else if (seed != 0) {
    solver_internal::HardInstance hard = solver_internal::MakeHardInstance(
        seed, calibrated ? solver_internal::CalibratedHardOptions()
                         : solver_internal::HardInstanceOptions{});
    set = hard.set;
    capacity = hard.capacity;
    packing = hard.offsets;
  } else {
    std::fprintf(stderr, "give --csv PATH or --seed S\n");
    return 2;
  }
  absl::StatusOr<solver_internal::Problem> problem =
      solver_internal::BuildProblem(set, 1);
  if (!problem.ok()) return 1;
  solver_internal::BuildOverlaps(*problem);
  std::vector<uint64_t> guide;
  if (guided) {
    if (packing.empty()) {
      std::fprintf(stderr,
                   "--guide needs --seed or a CSV with an offset column on "
                   "every row\n");
      return 2;
    }
    if (!csv.empty()) {
      // A guide must be a valid packing within the capacity.
      const absl::Status valid = CheckPlacement(set);
      uint64_t top = 0;
      for (const Buffer& b : set.buffers)
        top = std::max(top, *b.offset + b.size);
      if (!valid.ok() || top > capacity) {
        std::fprintf(
            stderr, "%s: the offsets are no packing within %llu: %s\n",
            csv.c_str(), static_cast<unsigned long long>(capacity),
            valid.ok() ? "too high" : std::string(valid.message()).c_str());
        return 1;
      }
    }
    for (int source : problem->source_index) guide.push_back(packing[source]);
  }
  for (int order = 0; order < orders; ++order) {
    solver_internal::FeasibilitySearch search(*problem, order, rerank);
    const std::vector<uint64_t> order_guide =
        guided ? solver_internal::PushDownPacking(
                     *problem, guide,
                     solver_internal::StaticOrderRanks(*problem, order))
               : guide;
    if (guided) search.set_guide(&order_guide);
    const solver_internal::SearchOutcome outcome =
        search.Run(capacity, {.node_limit = limit});
    std::printf("order %d %s nodes %llu deepest %d of %zu\n", order,
                outcome == solver_internal::SearchOutcome::kFound ? "found"
                : outcome == solver_internal::SearchOutcome::kInfeasible
                    ? "infeasible"
                    : "stopped",
                static_cast<unsigned long long>(search.nodes()),
                search.deepest(), problem->buffers.size());
    if (outcome != solver_internal::SearchOutcome::kFound) continue;
    // Where the nodes went: per placement on the final path, the nodes spent
    // on failed siblings before it (shown when at least 1% of the run).
    std::printf("  placements after failed siblings (depth:position:nodes):");
    const std::vector<uint64_t>& began = search.choice_nodes();
    for (size_t depth = 0; depth < began.size(); ++depth) {
      const uint64_t before = depth == 0 ? 1 : began[depth - 1] + 1;
      const uint64_t wasted = began[depth] - before;
      if (search.choices()[depth] != 0 &&
          (guided || wasted * 100 >= search.nodes()))
        std::printf(" %zu:%d:%llu", depth, search.choices()[depth],
                    static_cast<unsigned long long>(wasted));
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace
}  // namespace tensormem

int main(int argc, char** argv) { return tensormem::Main(argc, argv); }
