#!/usr/bin/env bash
# `make run`: the main job. Runs `tensormem bench` on the bundled corpus (data/:
# traces in data/traces, buffer sets from MiniMalloc and idealloc, and any
# model traces under data/models) through tf, pytorch (with and without
# expandable segments) and tight, every planner with optimal, and the real GPU
# snapshots of ../shared/data/pytorch-snapshots when present; prints a summary
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
# Real GPU snapshots (README there) join when this machine has them.
snapshots=()
if [ -d ../shared/data/pytorch-snapshots ]; then
  snapshots=(--snapshots ../shared/data/pytorch-snapshots)
fi
"$tensormem" bench --corpus data --out out --strategy all,optimal "${snapshots[@]}"
if "$tensormem" plan data/onnx/resnet50.onnx --strategy naive >/dev/null 2>&1; then
  echo
  echo "ONNX models (data/onnx, activations fused): MiB (ratio to the lower bound)"
  python3 tools/onnx/model_table.py --tensormem "$tensormem" --time-limit 2s \
      --out out/onnx_models.md
else
  echo "make run: $tensormem was built without ONNX support: data/onnx skipped" >&2
fi
echo "make run: done in $(( $(date +%s) - start )) s; open out/report.html in a browser"
