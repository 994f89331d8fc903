#!/usr/bin/env bash
# Peak memory of `tensormem replay` on a trace with N live ids (default 10^7),
# for docs/reliability.md: N allocations of 256 bytes, none freed. The trace
# is written gzipped to a temporary file (replay reads its input twice, so a
# pipe will not do; about 25 MB for 10^7) and removed afterwards.
# Usage: tools/hostile-replay-rss.sh [ids] [build_dir]   (build/default)
set -euo pipefail
cd "$(dirname "$0")/.."
ids=${1:-10000000}
tensormem="${2:-build/default}/tensormem"
[ -x "$tensormem" ] || { echo "hostile-replay-rss: $tensormem not built" >&2; exit 1; }
trace=$(mktemp --suffix=.trace.gz)
times=$(mktemp)
trap 'rm -f "$trace" "$times"' EXIT
awk -v n="$ids" 'BEGIN { for (i = 0; i < n; ++i) printf "a %d 256\n", i }' |
  gzip -1 >"$trace"
/usr/bin/time -v "$tensormem" replay "$trace" --json >/dev/null 2>"$times"
peak_kib=$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$times")
awk -v ids="$ids" -v kib="$peak_kib" 'BEGIN {
  printf "replay of %d live ids: peak RSS %.1f MiB, %.1f bytes per id\n",
         ids, kib / 1024, kib * 1024 / ids }'
