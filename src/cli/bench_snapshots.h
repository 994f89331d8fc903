// `tensormem bench --snapshots DIR`: every PyTorch snapshot in a folder
// through the compared allocators, beside what its GPU reserved.
#ifndef TENSORMEM_CLI_BENCH_SNAPSHOTS_H_
#define TENSORMEM_CLI_BENCH_SNAPSHOTS_H_

#include <string>
#include <vector>

#include "cli/bench_table.h"

namespace tensormem::cli {

// One row per `.pickle` or `.pickle.gz` in `folder` (sorted by name); a
// snapshot that cannot be read or replayed is skipped with its reason on
// stderr.
std::vector<SnapshotRow> BenchSnapshots(const std::string& folder);

}  // namespace tensormem::cli

#endif  // TENSORMEM_CLI_BENCH_SNAPSHOTS_H_
