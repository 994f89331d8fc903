#!/usr/bin/env bash
# Rebuilds the bundled trace corpus data/traces/*.trace.gz from the public
# buffer sets in data/ (each buffer allocated at `lower`, freed at `upper`,
# frees first at equal times; see `tensormem convert`). The sources' licenses
# apply to the derived traces: data/traces/LICENSE.md says which is which.
# Usage: tools/make_corpus.sh [build_dir]   (default build/default)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build/default}
tensormem="$build_dir/tensormem"
[ -x "$tensormem" ] || { echo "make_corpus: $tensormem not built" >&2; exit 1; }
mkdir -p data/traces
convert() {  # source csv, trace name
  "$tensormem" convert --from buffers --to trace "$1" "data/traces/$2.trace.gz" >/dev/null
  echo "data/traces/$2.trace.gz <- $1"
}
for set in data/minimalloc/challenging/*.csv; do
  name=$(basename "$set" .csv)
  convert "$set" "minimalloc_${name%%.*}"
done
for set in data/idealloc/somas_tensors/*.csv data/idealloc/iopddl/*.csv data/idealloc/iree/*.csv; do
  convert "$set" "idealloc_$(basename "$set" .csv)"
done
