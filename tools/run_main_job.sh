#!/usr/bin/env bash
# `make run`: the main job. Runs `tensormem bench` on the project's corpus
# (data/: traces and buffer sets of torchvision models under data/models, graphs
# under data/graphs) and, where this machine has the shared data
# (../shared/data, or $TENSORMEM_SHARED_DATA), MiniMalloc's and idealloc's
# buffer sets and the real GPU snapshots: through tf, pytorch (with and without
# expandable segments) and tight, every planner with optimal; prints a summary
# and writes out/report.html (charts, then a picture per workload); then plans
# the bundled ONNX models (data/onnx) with every planner into
# out/onnx_models.md (docs/onnx.md, a few seconds).
# Argument: the build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build/default}
tensormem="$build_dir/tensormem"
if [ ! -x "$tensormem" ]; then
  echo "run_main_job: $tensormem is not built (run 'make build' first)" >&2
  exit 1
fi
start=$(date +%s)
# Third-party sets and real GPU snapshots (README there) join when this
# machine has them; they are never copied into the repository.
shared=${TENSORMEM_SHARED_DATA:-../shared/data}
extra=()
if [ -d "$shared/minimalloc" ] || [ -d "$shared/idealloc" ]; then
  extra+=(--corpus "$shared")  # its buffer sets; the snapshots are no workloads
fi
if [ -d "$shared/pytorch-snapshots" ]; then
  extra+=(--snapshots "$shared/pytorch-snapshots")
fi
if [ ${#extra[@]} -eq 0 ]; then
  echo "make run: no shared data at $shared: the project's corpus only" >&2
fi
"$tensormem" bench --corpus data --out out --strategy all,optimal "${extra[@]}"
if "$tensormem" plan data/onnx/resnet50.onnx --strategy naive >/dev/null 2>&1; then
  echo
  echo "ONNX models (data/onnx, activations fused): MiB (ratio to the lower bound)"
  python3 tools/onnx/model_table.py --tensormem "$tensormem" --time-limit 2s \
      --out out/onnx_models.md
else
  echo "make run: $tensormem was built without ONNX support: data/onnx skipped" >&2
fi
echo "make run: done in $(( $(date +%s) - start )) s; open out/report.html in a browser"
