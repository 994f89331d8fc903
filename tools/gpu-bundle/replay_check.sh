#!/usr/bin/env bash
# replay_check.sh CLI FAKE_DRIVER DATA OUT: every trace in DATA replayed with
# `tf` and `tight` on the simulated upstream and on cuda and cuda-vmm, each
# both on the driver in use (the real one on a GPU) and on the bundle's fake.
#   tf:    every upstream must reserve exactly the simulated replay's peak
#          (growth takes whole regions, so the upstream cannot matter);
#   tight: cuda-vmm must reserve exactly what it reserves on the fake driver
#          (one reserved range: placements do not depend on where the driver
#          put it). It cannot equal the simulated peak: it gives holes back
#          in 2 MiB granules, not 256 B. cuda is reported only: its regions
#          lie wherever cuMemAlloc puts them, and best fit breaks ties by
#          address (an H200 reserved 1.4% less than the fake on resnet50;
#          docs/gpu-bundle.md).
# The GPU bundle's check runs it (step 3); one JSON per replay lands in OUT.
set -uo pipefail
cli=$1 fake=$2 data=$3 out=$4
limit=8GiB  # one pool limit on every upstream
failures=0

peak_of() {  # TRACE POLICY UPSTREAM NAME [ENV...]: prints the peak pool bytes
  local trace=$1 policy=$2 upstream=$3 name=$4
  shift 4
  local json="$out/$name.json"
  if ! env "$@" "$cli" replay "$trace" --policy "$policy" --sub-allocator "$upstream" \
      --memory-limit "$limit" --json >"$json" 2>"$json.err"; then
    echo "FAILED: $name: $(head -c 300 "$json.err")" >&2
    return 1
  fi
  if ! grep -q '"failed_allocs": 0,' "$json"; then
    echo "FAILED: $name: some allocations failed" >&2
    return 1
  fi
  grep -m1 -o '"peak_pool_bytes": [0-9]*' "$json" | grep -o '[0-9]*$'
}

for trace in "$data"/*.trace.gz; do
  trace_name=$(basename "$trace" .trace.gz)
  for policy in tf tight; do
    base="$trace_name.$policy"
    simulated=$(peak_of "$trace" "$policy" simulated "$base.simulated") || { failures=$((failures + 1)); continue; }
    line="$base: simulated $simulated"
    for upstream in cuda cuda-vmm; do
      on_gpu=$(peak_of "$trace" "$policy" "$upstream" "$base.$upstream") || { failures=$((failures + 1)); continue; }
      on_fake=$(peak_of "$trace" "$policy" "$upstream" "$base.$upstream.fake" \
        "TENSORMEM_CUDA_DRIVER=$fake") || { failures=$((failures + 1)); continue; }
      line="$line, $upstream $on_gpu (fake driver $on_fake)"
      [ "$policy" = tight ] && [ "$upstream" = cuda ] && continue
      expected=$on_fake
      [ "$policy" = tf ] && expected=$simulated
      if [ "$on_gpu" != "$expected" ] || [ "$on_fake" != "$on_gpu" ]; then
        echo "DIFFERS: $base $upstream: reserved $on_gpu, expected $expected" >&2
        failures=$((failures + 1))
      fi
    done
    echo "$line"
  done
done
[ "$failures" = 0 ] && echo "replay_check: every replay reserved what it must"
exit $((failures > 0))
