// The page `tensormem bench` writes (OUT/report.html): the story in charts —
// reserved / peak live for TensorFlow's, PyTorch's and tensormem's
// allocators on the traces and on real GPU snapshots, every planner against
// the lower bound on the buffer sets — then every workload, linked to its
// own picture.
#ifndef TENSORMEM_CLI_BENCH_PAGE_H_
#define TENSORMEM_CLI_BENCH_PAGE_H_

#include <string>
#include <vector>

#include "cli/bench_table.h"

namespace tensormem::cli {

std::string RenderBenchPage(const std::string& corpus,
                            const std::vector<BenchRow>& rows,
                            const std::vector<SnapshotRow>& snapshots);

}  // namespace tensormem::cli

#endif  // TENSORMEM_CLI_BENCH_PAGE_H_
