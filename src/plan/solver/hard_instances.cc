#include "plan/solver/hard_instances.h"

#include <algorithm>
#include <random>

namespace tensormem::solver_internal {
namespace {

struct Cell {
  int begin, end;  // time columns [begin, end)
  int bottom, height;
};

// Tiles grid x grid by repeated random cuts: the largest piece is cut across
// its longer side (in time or in memory) at a random point, until there are
// enough pieces. Cuts in memory give buffers that share a lifetime and must
// stack exactly; cuts in time give the many shared endpoints of the
// challenging sets.
std::vector<Cell> Cut(std::mt19937_64& random, const HardInstanceOptions& o) {
  const int n =
      o.min_buffers +
      static_cast<int>(random() % (o.max_buffers - o.min_buffers + 1));
  std::vector<Cell> cells = {{0, o.grid, 0, o.grid}};
  std::uniform_real_distribution<double> where(0.15, 0.85);
  while (static_cast<int>(cells.size()) < n) {
    // A random one of the larger pieces: the smallest never get cut again.
    std::sort(cells.begin(), cells.end(), [](const Cell& a, const Cell& b) {
      return static_cast<int64_t>(a.end - a.begin) * a.height >
             static_cast<int64_t>(b.end - b.begin) * b.height;
    });
    const size_t pick = random() % std::max<size_t>(1, cells.size() / 3);
    Cell cell = cells[pick];
    const int width = cell.end - cell.begin;
    const bool in_time =
        width > 1 && (cell.height == 1 || random() % (width + cell.height) <
                                              static_cast<uint64_t>(width));
    if (in_time) {
      const int at =
          std::clamp(static_cast<int>(width * where(random)), 1, width - 1);
      cells[pick].end = cell.begin + at;
      cells.push_back({cell.begin + at, cell.end, cell.bottom, cell.height});
    } else if (cell.height > 1) {
      const int at = std::clamp(static_cast<int>(cell.height * where(random)),
                                1, cell.height - 1);
      cells[pick].height = at;
      cells.push_back(
          {cell.begin, cell.end, cell.bottom + at, cell.height - at});
    } else {
      break;
    }
  }
  return cells;
}

}  // namespace

HardInstanceOptions CalibratedHardOptions() {
  HardInstanceOptions options;
  options.min_buffers = 180;
  options.max_buffers = 320;
  options.min_removed_area = 0.02;
  options.max_removed_area = 0.11;
  options.full_columns = 1;
  options.small_first = true;
  return options;
}

HardInstance MakeHardInstance(uint64_t seed,
                              const HardInstanceOptions& options) {
  std::mt19937_64 random(seed * 0x9E3779B97F4A7C15ull + 1);
  std::vector<Cell> cells = Cut(random, options);
  // Thin the tiling, never touching the protected columns.
  std::vector<int> full_columns(options.full_columns);
  for (int& column : full_columns) column = random() % options.grid;
  std::shuffle(cells.begin(), cells.end(), random);
  auto area_of = [](const Cell& c) {
    return static_cast<int64_t>(c.end - c.begin) * c.height;
  };
  if (options.small_first) {
    std::stable_sort(
        cells.begin(), cells.end(),
        [&](const Cell& a, const Cell& b) { return area_of(a) < area_of(b); });
  }
  const double total_area = static_cast<double>(options.grid) * options.grid;
  std::uniform_real_distribution<double> fraction(options.min_removed_area,
                                                  options.max_removed_area);
  const double to_remove = fraction(random) * total_area;
  double removed = 0;
  std::vector<Cell> kept;
  for (const Cell& cell : cells) {
    const bool protected_cell =
        std::any_of(full_columns.begin(), full_columns.end(),
                    [&](int t) { return cell.begin <= t && t < cell.end; });
    const double area =
        static_cast<double>(cell.end - cell.begin) * cell.height;
    if (!protected_cell && removed + area <= to_remove) {
      removed += area;
      continue;
    }
    kept.push_back(cell);
  }
  HardInstance instance;
  instance.capacity = static_cast<uint64_t>(options.grid) * options.unit;
  for (const Cell& cell : kept) {
    Buffer b;
    b.id = instance.set.buffers.size();
    b.lower = static_cast<int64_t>(cell.begin * options.unit);
    b.upper = static_cast<int64_t>(cell.end * options.unit);
    b.size = static_cast<uint64_t>(cell.height) * options.unit;
    instance.set.buffers.push_back(b);
    instance.offsets.push_back(static_cast<uint64_t>(cell.bottom) *
                               options.unit);
  }
  return instance;
}

}  // namespace tensormem::solver_internal
