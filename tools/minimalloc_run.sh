#!/bin/sh
# Runs MiniMalloc's CLI (an external comparator built from its public source,
# see docs/solver.md) with the arguments tools/solver_compare.py passes:
#   minimalloc_run.sh plan PATH --strategy optimal --capacity C --time-limit Ns [--json]
# Exits 0 only when MiniMalloc finds a packing within C and its own validator
# passes it; MINIMALLOC names the binary (default: minimalloc on the PATH),
# MINIMALLOC_OUT_DIR keeps the packings (CSV with an offset column).
# MiniMalloc's --timeout is wall-clock; solver_compare.py counts CPU time.
binary=${MINIMALLOC:-minimalloc}
path="" capacity="" limit=""
while [ $# -gt 0 ]; do
  case "$1" in
    plan | --json) ;;
    --strategy) shift ;;
    --capacity) shift; capacity="$1" ;;
    --time-limit) shift; limit="$1" ;;
    *) path="$1" ;;
  esac
  shift
done
if [ -z "$path" ] || [ -z "$capacity" ]; then
  echo "usage: minimalloc_run.sh plan PATH --capacity C [--time-limit Ns]" >&2
  exit 2
fi
out_dir=${MINIMALLOC_OUT_DIR:-$(mktemp -d)}
out="$out_dir/$(basename "$path")"
timeout_flag=""
if [ -n "$limit" ] && [ "$limit" != "0" ] && [ "$limit" != "0s" ]; then
  timeout_flag="--timeout=$limit"
fi
log=$("$binary" --capacity="$capacity" --input="$path" --output="$out" \
  --validate $timeout_flag 2>&1)
status=$?
[ -z "$MINIMALLOC_OUT_DIR" ] && rm -rf "$out_dir"
[ $status -eq 0 ] || exit 1
case "$log" in
  *PASS*) exit 0 ;;
  *) echo "$path: MiniMalloc's validator refused its packing: $log" >&2; exit 1 ;;
esac
