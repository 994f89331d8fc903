#!/usr/bin/env bash
# Runs every fuzz target of a `fuzz` build for a number of seconds each.
#
#   bash fuzz/run_fuzzers.sh build/fuzz 60 [target ...]
#
# With FUZZ_RUNS=N each target instead runs N inputs from seed 1 (at most
# SECONDS): the same inputs on every machine, so a CI smoke run does not fail
# on a crash that a luckier run happened to find. FUZZ_SEED=0 picks a new seed
# (long runs that stop at a number of executions). FUZZ_MAX_LEN=N caps the
# input length (libFuzzer's -max_len; longer corpus inputs are cut): the ONNX
# target's corpus grows to whole models of 24 KB at 5-10 ms each, and smaller
# inputs reach the loader's paths many times faster. FUZZ_TIMEOUT=N (seconds,
# default 10) is libFuzzer's -timeout, which counts wall-clock time: a niced
# run on a loaded machine can be descheduled that long on an input of a few
# milliseconds.
#
# Each target starts from its checked-in seeds (fuzz/corpus/<name>) plus what
# earlier runs found (<build>/corpus/<name>, which grows), with its dictionary
# when there is one. Logs go to <build>/logs/<name>.log (read by
# tools/reliability-report, with one line per run in history.tsv: time,
# target, seconds, executions, edge coverage, features, exit status), crash
# inputs to <build>/crashes/. Exits non-zero
# when any target crashed, leaked, timed out or ran out of memory.
set -uo pipefail
cd "$(dirname "$0")/.."

build=${1:?usage: run_fuzzers.sh BUILD_DIR SECONDS [TARGET...]}
seconds=${2:?usage: run_fuzzers.sh BUILD_DIR SECONDS [TARGET...]}
shift 2
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=($(ls fuzz/corpus))
fi

mkdir -p "$build/logs" "$build/crashes"
failed=()
for target in "${targets[@]}"; do
  binary="$build/fuzz/fuzz_$target"
  if [ ! -x "$binary" ]; then
    # Optional front ends (ONNX without libonnx-dev) have no target.
    echo "run_fuzzers: $target skipped: $binary not built" >&2
    continue
  fi
  corpus="$build/corpus/$target"
  mkdir -p "$corpus"
  flags=(-max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048
         -print_final_stats=1 -artifact_prefix="$build/crashes/$target-")
  [ -n "${FUZZ_RUNS:-}" ] && flags+=(-runs="$FUZZ_RUNS" -seed="${FUZZ_SEED:-1}")
  [ -n "${FUZZ_MAX_LEN:-}" ] && flags+=(-max_len="$FUZZ_MAX_LEN")
  dictionary="fuzz/dictionaries/$target.dict"
  [ -f "$dictionary" ] && flags+=(-dict="$dictionary")
  # Hostile sizes must fail cleanly, not abort inside the sanitizer's malloc.
  ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 \
    "$binary" "${flags[@]}" "$corpus" "fuzz/corpus/$target" \
    >"$build/logs/$target.log" 2>&1
  status=$?
  summary=$(grep -E "^#[0-9]+[[:space:]]+DONE" "$build/logs/$target.log" | tail -1)
  # One line per run for tools/reliability-report: the totals span runs.
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/logs/$target.log")
  coverage=$(grep -oE "cov: [0-9]+ ft: [0-9]+" "$build/logs/$target.log" | tail -1 |
             awk '{print $2 "\t" $4}')
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$target" "$seconds" \
    "${executions:-0}" "${coverage:-0	0}" "$status" >>"$build/logs/history.tsv"
  if [ $status -ne 0 ]; then
    failed+=("$target")
    echo "run_fuzzers: $target FAILED (exit $status), see $build/logs/$target.log:" >&2
    grep -E "ERROR|SUMMARY|check failed|runtime error" "$build/logs/$target.log" | head -5 >&2
  else
    echo "run_fuzzers: $target ok: ${summary}"
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "run_fuzzers: failed: ${failed[*]}" >&2
  exit 1
fi
